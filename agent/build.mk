# agent/: cellvm-agent, the guest-side server of the cellvm protocol.
AGENT_SRCS := agent/main.c agent/loop.c agent/log.c agent/boot.c agent/listen.c agent/conn.c \
              agent/requests.c agent/context.c agent/execution.c agent/zygote.c \
              agent/utf8_stream.c agent/uuid.c agent/language.c
# Files and commands services (docs/PROTOCOL.md sections 9-10).
AGENT_SRCS += agent/svc.c agent/creds.c agent/files.c agent/file_transfer.c agent/fswatch.c \
              agent/commands.c
AGENT_SRCS += agent/confine_agent.c agent/cgroup.c agent/agent_seccomp.c agent/agent_caps.c \
              agent/spawner.c
# SET_TIME / ADD_ENTROPY; the seeding code is cellvm-init's own (init/entropy.c).
# Snapshots: SNAPSHOT_PREPARE / NEW_GENERATION and the kernel's VM-fork notice.
AGENT_SRCS += agent/system.c init/entropy.c agent/generation.c agent/vmfork.c agent/kmsg.c
AGENT_OBJS := $(AGENT_SRCS:%.c=$(B)/%.o)

# Confinement of user code (agent/confine.h): linked into the agent and the executor.
CONFINE_SRCS := agent/confine.c agent/confine_policy.c agent/confine_seccomp.c
CONFINE_OBJS := $(CONFINE_SRCS:%.c=$(B)/%.o)
CONFINE_LIBS := -lseccomp

$(B)/cellvm-agent: $(AGENT_OBJS) $(CONFINE_OBJS) $(PROTO_LIB)
	$(CC) $(LDFLAGS) -o $@ $(AGENT_OBJS) $(CONFINE_OBJS) $(PROTO_LIB) $(PROTO_LIBS) $(CONFINE_LIBS)

# C unit tests of the confinement policy text, the user-code seccomp filter and
# the agent's allowlist (tests/c/test_{confine,agent}*.c): part of `make check-c`.
CONFINE_TESTS := $(B)/tests/c/test_confine_policy $(B)/tests/c/test_confine_seccomp \
                 $(B)/tests/c/test_agent_seccomp

$(B)/tests/c/test_confine_policy: $(B)/tests/c/test_confine_policy.o $(B)/agent/confine_policy.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_confine_seccomp: $(B)/tests/c/test_confine_seccomp.o $(B)/agent/confine_seccomp.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CONFINE_LIBS)

# The agent's allowlist, loaded in a forked child (tests/c/test_agent_seccomp.c).
$(B)/tests/c/test_agent_seccomp: $(B)/tests/c/test_agent_seccomp.o $(B)/agent/agent_seccomp.o \
		$(B)/agent/confine_seccomp.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CONFINE_LIBS)

.PHONY: check-c-confine
check-c-confine: $(CONFINE_TESTS)
	@set -e; for t in $(CONFINE_TESTS); do echo "== $$t"; $$t; done

check-c: check-c-confine

# The kernel log records the agent reads for the VM-fork notice (tests/c/test_agent_kmsg.c).
AGENT_TESTS := $(B)/tests/c/test_agent_kmsg

$(B)/tests/c/test_agent_kmsg: $(B)/tests/c/test_agent_kmsg.o $(B)/agent/kmsg.o
	$(CC) $(LDFLAGS) -o $@ $^

.PHONY: check-c-agent
check-c-agent: $(AGENT_TESTS)
	@set -e; for t in $(AGENT_TESTS); do echo "== $$t"; $$t; done

check-c: check-c-agent
