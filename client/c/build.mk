# client/c: libcellvm (host-side C client) and the `cellvm` CLI.
CLIENT_LIB_SRCS := client/c/connect.c client/c/client.c client/c/event.c client/c/files.c \
                   client/c/print_json.c client/c/vmm.c
CLIENT_LIB_OBJS := $(CLIENT_LIB_SRCS:%.c=$(B)/%.o)
CLIENT_LIB      := $(B)/libcellvm.a
CFLAGS_client_c_ := -Iclient/c

$(CLIENT_LIB): $(CLIENT_LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(B)/cellvm: $(B)/client/c/cli.o $(CLIENT_LIB) $(PROTO_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ -lcbor -lm
