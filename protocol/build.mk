# protocol/: the wire codec shared by the agent, the executor and libcellvm.
PROTO_SRCS := protocol/frame.c protocol/msgtypes.c protocol/buf.c protocol/writer.c \
              protocol/reader.c protocol/cbor_util.c protocol/fd_pass.c \
              protocol/port_data.c
PROTO_OBJS := $(PROTO_SRCS:%.c=$(B)/%.o)
PROTO_LIB  := $(B)/libcellvm-proto.a
PROTO_LIBS := -lcbor

$(PROTO_LIB): $(PROTO_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# C unit tests of the codec (tests/c/test_protocol*.c): `make check-c`.
PROTO_TEST_SRCS := $(wildcard tests/c/test_protocol*.c)
PROTO_TESTS     := $(PROTO_TEST_SRCS:tests/c/%.c=$(B)/tests/c/%)

$(PROTO_TESTS): $(B)/tests/c/%: $(B)/tests/c/%.o $(PROTO_LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(PROTO_LIB) $(PROTO_LIBS)

.PHONY: check-c-protocol
check-c-protocol: $(PROTO_TESTS)
	@set -e; for t in $(PROTO_TESTS); do echo "== $$t"; $$t; done

check-c: check-c-protocol
