# cellvm-init: static PID 1 for the guest, built with musl (not $(CC)) so the
# image needs no libc or dynamic loader for it; with common/'s sources (sizes,
# entropy seeding), compiled with musl too. Unit tests of its pure parts
# (command line, modules.dep ordering, agent argv, restart backoff, CIDR and
# resolv.conf text, deadline) build with the normal $(CC), under ASan/UBSan
# with SAN=1, and run from `make check-init` (part of check-c).

MUSL_CC        ?= musl-gcc
INIT_SRCS      := $(wildcard init/*.c)
INIT_MUSL_DIR  := $(B)/init-musl
INIT_MUSL_INC  := $(B)/musl-include
INIT_MUSL_OBJS := $(patsubst init/%.c,$(INIT_MUSL_DIR)/%.o,$(INIT_SRCS)) \
                  $(patsubst common/%.c,$(INIT_MUSL_DIR)/common/%.o,$(COMMON_SRCS))
INIT_MAX_BYTES := 102400
INIT_CFLAGS    := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Os -fno-strict-aliasing \
                  -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables \
                  -I$(INIT_MUSL_INC)
INIT_LDFLAGS   := -static -Wl,--gc-sections

.PHONY: check-init check-init-size
all: $(B)/cellvm-init $(B)/cellvm-init.stripped
check-c: check-init

# musl-gcc searches only musl's headers; the kernel uapi ones come from the
# host's linux-libc-dev through symlinks.
$(INIT_MUSL_INC)/.stamp:
	@mkdir -p $(INIT_MUSL_INC)
	ln -sfn /usr/include/linux $(INIT_MUSL_INC)/linux
	ln -sfn /usr/include/asm-generic $(INIT_MUSL_INC)/asm-generic
	ln -sfn /usr/include/$(shell gcc -dumpmachine)/asm $(INIT_MUSL_INC)/asm
	@touch $@

$(INIT_MUSL_DIR)/%.o: init/%.c $(INIT_MUSL_INC)/.stamp
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(INIT_CFLAGS) -MMD -MP -c -o $@ $<

$(INIT_MUSL_DIR)/common/%.o: common/%.c $(INIT_MUSL_INC)/.stamp
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(INIT_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/cellvm-init: $(INIT_MUSL_OBJS)
	$(MUSL_CC) $(INIT_LDFLAGS) -o $@ $^

$(B)/cellvm-init.stripped: $(B)/cellvm-init
	strip -o $@ $<

check-init-size: $(B)/cellvm-init.stripped
	@size=$$(stat -c %s $<); \
	if [ $$size -gt $(INIT_MAX_BYTES) ]; then \
		echo "cellvm-init is $$size bytes stripped, over $(INIT_MAX_BYTES)"; exit 1; \
	fi; echo "cellvm-init: $$size bytes stripped (limit $(INIT_MAX_BYTES))"

TEST_INIT_BINS := $(B)/tests/c/test_init_cmdline $(B)/tests/c/test_init_moddep \
                  $(B)/tests/c/test_init_modparams $(B)/tests/c/test_init_agent \
                  $(B)/tests/c/test_init_backoff $(B)/tests/c/test_init_network \
                  $(B)/tests/c/test_init_deadline

$(B)/tests/c/test_init_cmdline: $(B)/tests/c/test_init_cmdline.o $(B)/init/cmdline.o \
				$(B)/init/config.o $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_init_moddep: $(B)/tests/c/test_init_moddep.o $(B)/init/moddep.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_init_modparams: $(B)/tests/c/test_init_modparams.o $(B)/init/modules.o \
				$(B)/init/moddep.o $(B)/init/cmdline.o $(B)/init/log.o $(B)/init/stamps.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_init_agent: $(B)/tests/c/test_init_agent.o $(B)/init/agent.o $(B)/init/config.o \
				$(B)/init/cmdline.o $(B)/init/log.o $(B)/init/stamps.o $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_init_backoff: $(B)/tests/c/test_init_backoff.o $(B)/init/backoff.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_init_network: $(B)/tests/c/test_init_network.o $(B)/init/netconf.o \
				$(B)/init/network.o $(B)/init/log.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_init_deadline: $(B)/tests/c/test_init_deadline.o $(B)/init/deadline.o
	$(CC) $(LDFLAGS) -o $@ $^

check-init: $(TEST_INIT_BINS) check-init-size
	@for t in $(TEST_INIT_BINS); do echo "== $$t"; $$t || exit 1; done
