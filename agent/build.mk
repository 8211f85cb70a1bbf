# agent/: cellvm-agent, the guest-side server of the cellvm protocol.
AGENT_SRCS := agent/main.c agent/loop.c agent/log.c agent/boot.c agent/listen.c agent/conn.c \
              agent/requests.c agent/context.c agent/execution.c agent/zygote.c \
              agent/utf8_stream.c agent/uuid.c agent/language.c
# Files, commands and ports services (docs/PROTOCOL.md sections 9, 10, 12).
AGENT_SRCS += agent/svc.c agent/creds.c agent/files.c agent/file_transfer.c agent/fswatch.c \
              agent/commands.c agent/pty.c agent/ports.c \
              agent/egress.c
AGENT_SRCS += agent/confine_agent.c agent/netif.c agent/cgroup.c agent/agent_seccomp.c agent/agent_caps.c \
              agent/spawner.c
# SET_TIME / ADD_ENTROPY / SET_DEADLINE (docs/PROTOCOL.md section 11); snapshots:
# SNAPSHOT_PREPARE / NEW_GENERATION and the kernel's VM-fork notice (docs/SNAPSHOTS.md).
AGENT_SRCS += agent/system.c agent/generation.c agent/vmfork.c agent/kmsg.c
# SYS_STATS: the guest's CPU, memory and disk counters (E2B's metrics).
AGENT_SRCS += agent/stats.c
# A small file read whole (/proc, cgroup files): stats.c and cgroup.c.
AGENT_SRCS += agent/small_file.c
AGENT_OBJS := $(AGENT_SRCS:%.c=$(B)/%.o)

# Uses protocol/ (the codec), confine/ (user code's confinement) and common/
# (sizes in its options, entropy seeding, init's deadline signal).
$(B)/cellvm-agent: $(AGENT_OBJS) $(PROTO_LIB) $(CONFINE_LIB) $(COMMON_LIB)
	$(CC) $(LDFLAGS) -o $@ $(AGENT_OBJS) $(PROTO_LIB) $(CONFINE_LIB) $(COMMON_LIB) \
		$(PROTO_LIBS) $(CONFINE_LIBS)

# C unit test of the agent's allowlist, loaded in a forked child
# (tests/c/test_agent_seccomp.c): part of `make check-c`.
AGENT_TESTS := $(B)/tests/c/test_agent_seccomp
# The kernel log records the agent reads for the VM-fork notice (tests/c/test_agent_kmsg.c).
AGENT_TESTS += $(B)/tests/c/test_agent_kmsg

$(B)/tests/c/test_agent_kmsg: $(B)/tests/c/test_agent_kmsg.o $(B)/agent/kmsg.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_agent_seccomp: $(B)/tests/c/test_agent_seccomp.o $(B)/agent/agent_seccomp.o \
		$(CONFINE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(CONFINE_LIBS)

.PHONY: check-c-agent
check-c-agent: $(AGENT_TESTS)
	@set -e; for t in $(AGENT_TESTS); do echo "== $$t"; $$t; done

check-c: check-c-agent
