/*
 * The spawner: a process the agent forks during setup, before it loads its
 * seccomp allowlist, that creates the agent's children for it (the zygote,
 * command processes). The agent itself can then no longer fork or exec. The
 * spawner reads nothing but the agent's requests on a socketpair; its children
 * are created with CLONE_PARENT, so they are the agent's children (reaped,
 * killed and adopted as before). docs/SECURITY.md explains the design.
 */
#ifndef CELLVM_AGENT_SPAWNER_H
#define CELLVM_AGENT_SPAWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct agent;
struct creds;
struct spawn_spec;

/* What the spawner's children run, given at its start (main.c), so that the spawner names
 * neither the zygote nor commands. Each runs in the new process and never returns. */
struct spawner_children {
        /* The zygote's process: its control socket is `fd`; errno goes to `errfd`. */
        void (*zygote)(struct agent *a, int fd, int errfd) __attribute__((noreturn));
        /* A command's process, with its stdio ends; errno goes to `errfd`. */
        void (*command)(const struct spawn_spec *s, int in_fd, int out_fd, int err_fd, int errfd)
            __attribute__((noreturn));
};

/* The agent's end of the spawner. */
struct spawner {
        pid_t pid;
        int fd;    /* socketpair to it, -1 once closed */
        bool lost; /* it died or broke the channel: the agent shuts down */
        struct spawner_children children;
};

/* A command's process: what its child needs before exec (commands.c). */
struct spawn_spec {
        const char *cmd;   /* run as `bash -l -c cmd`, or */
        char *const *argv; /* exec'd as it is (argv[0] a path), when not NULL */
        const char *cwd;
        const struct creds *cr;
        char **env;
        bool with_stdin;
        /* fds 0-2 are a pty's slave: the child starts a session with it as its terminal. */
        bool pty;
        uint16_t cols, rows; /* the pty's first size (the agent opens it; not sent) */
        /* Set by the spawner from its own copy: the commands' cgroup.procs, "" for none. */
        const char *cgroup_procs;
        /* The agent's own tool (spawn_is_system_tool), as root with the agent's capabilities
         * and without user code's confinement. */
        bool system;
};

/* `argv` runs the agent's filesystem-snapshot tool (SPAWN_SYSTEM_TOOL, then its own
 * arguments): the one program CMD_START's `system` may run. */
#define SPAWN_SYSTEM_TOOL "/usr/lib/cellvm/fs-snapshot"
bool spawn_is_system_tool(char *const *argv);

/* Forks the spawner, before the agent's first child and its filter; the spawner drops the
 * capabilities the agent drops after setup. 0 or -errno. */
int spawner_start(struct agent *a, const struct spawner_children *children);
/* Starts the zygote with its control socket end `fd`. Returns its pid once it has exec'd, or
 * -errno (of the spawn, or the child's). */
pid_t spawner_zygote(struct agent *a, int fd);
/* Starts a command with the given stdio ends. Returns its pid or -errno, where the errno
 * may be the child's own (its setup or exec failed: it exits 127). */
pid_t spawner_command(struct agent *a, const struct spawn_spec *s, int in_fd, int out_fd,
                      int err_fd);
/* The spawner was reaped: the agent shuts down (it cannot fork any more). True if `pid` was it. */
bool spawner_reaped(struct agent *a, pid_t pid, int status);
/* Closes the channel and waits for the spawner to exit. */
void spawner_stop(struct agent *a);

#endif
