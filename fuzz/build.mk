# fuzz/: libFuzzer targets for every decoder of untrusted bytes. Built with
# clang into build/fuzz (own objects: libFuzzer needs coverage instrumentation).
FUZZ_CC     ?= clang
FUZZ_DIR    := build/fuzz
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Iprotocol -Iclient/c \
               -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_PROTO  := $(PROTO_SRCS)
FUZZ_TARGETS := $(FUZZ_DIR)/fuzz_agent_decoder $(FUZZ_DIR)/fuzz_client_decoder

$(FUZZ_DIR)/fuzz_agent_decoder: fuzz/fuzz_agent_decoder.c $(FUZZ_PROTO)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $^ -lcbor

$(FUZZ_DIR)/fuzz_client_decoder: fuzz/fuzz_client_decoder.c client/c/event.c $(FUZZ_PROTO)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $^ -lcbor

fuzz: $(FUZZ_TARGETS)
