# common/: helpers that cellvm-init and cellvm-agent both compile in, on libc
# alone: numbers and sizes in text (parse_num.h: init's command line, the
# agent's options), seeding the kernel's entropy pool (entropy.h: init's
# cellvm.entropy, the agent's ADD_ENTROPY), the signal with which the agent
# moves init's deadline (init_signal.h). The library $(COMMON_LIB) is built
# with $(CC) for the agent and the C tests; init/build.mk compiles the same
# sources with musl into cellvm-init.
COMMON_SRCS := common/parse_num.c common/entropy.c
COMMON_OBJS := $(COMMON_SRCS:%.c=$(B)/%.o)
COMMON_LIB  := $(B)/libcellvm-common.a

$(COMMON_LIB): $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# C unit tests of the parsers and of the hex seed decoding (tests/c/test_parse_num.c,
# tests/c/test_entropy.c): part of `make check-c`.
COMMON_TESTS := $(B)/tests/c/test_parse_num $(B)/tests/c/test_entropy

$(COMMON_TESTS): $(B)/tests/c/%: $(B)/tests/c/%.o $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(COMMON_LIB)

.PHONY: check-c-common
check-c-common: $(COMMON_TESTS)
	@set -e; for t in $(COMMON_TESTS); do echo "== $$t"; $$t; done

check-c: check-c-common
