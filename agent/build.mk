# agent/: cellvm-agent, the guest-side server of the cellvm protocol.
AGENT_SRCS := agent/main.c agent/loop.c agent/log.c agent/boot.c agent/listen.c agent/conn.c \
              agent/requests.c agent/context.c agent/execution.c agent/zygote.c \
              agent/utf8_stream.c agent/uuid.c
AGENT_OBJS := $(AGENT_SRCS:%.c=$(B)/%.o)

$(B)/cellvm-agent: $(AGENT_OBJS) $(PROTO_LIB)
	$(CC) $(LDFLAGS) -o $@ $(AGENT_OBJS) $(PROTO_LIB) $(PROTO_LIBS)
