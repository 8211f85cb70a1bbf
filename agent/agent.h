/*
 * cellvm-agent: the state shared by its parts. One single-threaded epoll loop
 * (loop.c) drives connections (conn.c, requests.c), contexts with their
 * executor processes (context.c, execution.c) and the zygote (zygote.c).
 */
#ifndef CELLVM_AGENT_H
#define CELLVM_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "buf.h"
#include "cgroup.h"
#include "reader.h"
#include "utf8_stream.h"
#include "uuid.h"

#define AGENT_VERSION "0.1.0"

/* Output queued for a connection past which the agent stops reading what feeds it. */
#define CONN_HIGH_WATER (4u * 1024u * 1024u)
/* Requests one connection may have in flight (queued or running executions). */
#define CONN_MAX_INFLIGHT 1024u
#define AGENT_MAX_CONTEXTS 64u
/* Between the interrupt of a cell and the kill of its process (spec section 4). */
#define INTERRUPT_GRACE_NS (2000000000ull)
/* Time an executor gets from Z_SPAWN to X_READY. */
#define EXECUTOR_START_TIMEOUT_NS (60000000000ull)
/* Consecutive failed starts after which queued executions are failed. */
#define CONTEXT_MAX_START_FAILURES 3u

struct agent;
struct egress_wait;

/* An fd in the epoll set; `fn` handles its events. Embedded in its owner. */
struct watch {
        int fd;
        uint32_t events; /* registered interest, 0 = not in the epoll set */
        void (*fn)(struct agent *a, struct watch *w, uint32_t events);
};

enum transport { TR_UNIX, TR_VSOCK, TR_TCP, TR_SERIAL };

struct listener {
        struct listener *next;
        enum transport kind;
        char *addr;      /* as given on the command line */
        char *unix_path; /* removed at exit */
        struct watch w;
        struct conn *serial_conn; /* TR_SERIAL: the one connection, NULL while reopening */
        uint64_t reopen_at;       /* TR_SERIAL: monotonic ns of the next open attempt, 0 = none */
};

struct conn {
        struct conn *next;
        unsigned num; /* for logs */
        enum transport kind;
        struct listener *serial; /* set for the serial port's connection */
        struct watch w;
        struct cv_reader rd;
        struct cv_buf out;
        bool hello_done;
        bool dirty;           /* output appended since the last flush */
        bool closing;         /* flush what can be flushed, then close */
        struct exec *execs;   /* in flight, linked by conn_next */
        struct svc_req *svcs; /* files/commands requests in flight (services.h) */
        unsigned ninflight;
};

enum exec_end { END_NORMAL, END_TIMEOUT, END_CANCELLED };

/* One EXECUTE request. */
struct exec {
        struct exec *queue_next; /* in its context's queue */
        struct exec *conn_next;  /* in its connection's in-flight list */
        struct conn *conn;       /* NULL once the client is gone: output is dropped */
        struct context *ctx;
        uint32_t client_id;
        uint32_t internal_id;
        struct cv_buf xbody; /* the X_EXECUTE body's pairs (without the map header) */
        unsigned xpairs;     /* how many */
        uint64_t timeout_ns; /* 0 = none */
        uint64_t deadline;   /* monotonic ns, while running */
        enum exec_end end;
        bool running;
        bool input_seen;          /* EXEC_INPUT relayed: output from now on is the cell's */
        bool interrupt_pending;   /* INTERRUPT came before EXEC_INPUT: signal at EXEC_INPUT */
        uint64_t execution_count; /* from EXEC_INPUT */
        uint64_t output_bytes;    /* stdout + stderr bytes of the cell, to apply output_max */
        bool output_truncated;    /* the truncation notice went out; the rest is dropped */
};

enum ctx_state {
        CTX_DORMANT,     /* no process until its first execution (context_dormant) */
        CTX_WAIT_ZYGOTE, /* no process; spawn when the zygote is ready */
        CTX_STARTING,    /* Z_SPAWN sent, waiting for X_READY */
        CTX_READY,       /* executor idle or running `running` */
        CTX_DYING,       /* control socket closed, waiting to reap the executor */
        CTX_BACKOFF,     /* failed to start; respawn at `respawn_at` */
};

struct context {
        struct context *next;
        char id[UUID_TEXT_LEN + 1];
        char *cwd;
        const char *language; /* canonical name (language.c), static */
        bool lang_default;    /* the context EXECUTE{language} without `context` runs in */
        enum ctx_state state;
        bool removed;        /* gone from the list; freed once its process is */
        bool restarting;     /* CONTEXT_RESTART: the death is expected */
        bool executor_ready; /* the current executor sent X_READY */
        bool spawned_seen;   /* the zygote answered this spawn's Z_SPAWN */
        bool ctl_eof_early;  /* its first control socket ended before that answer */
        pid_t pid;           /* executor pid, 0 if unknown */
        uint32_t spawn_id;
        unsigned start_failures;
        uint64_t start_deadline; /* CTX_STARTING: kill if not ready by then */
        uint64_t kill_at;        /* monotonic ns of the SIGKILL after an interrupt, 0 = none */
        uint64_t respawn_at;
        struct watch ctl, out, err; /* control socket, stdout and stderr pipes */
        struct cv_reader ctl_rd;
        struct cv_buf ctl_out;
        struct utf8_stream dec_out, dec_err;
        bool paused; /* the running execution's client is over its high water */
        struct exec *queue_head, *queue_tail; /* waiting executions */
        struct exec *running;
        char *death_reason; /* why the last executor ended, for ContextRestarted */
        bool cgroup;        /* has its own cgroup under agent.cgroup_parent */
        bool pipe_lost;     /* the live executor closed its stdout or stderr */
};

/* Fds a Z_SPAWNED may carry (a warm Node.js spare's ctl, stdout, stderr), queued until read. */
#define ZYGOTE_MAX_FDS 16
#define ZYGOTE_READ_CHUNK 4096

struct zygote {
        pid_t pid;
        bool ready;
        struct watch w;
        struct cv_reader rd;
        uint8_t in[ZYGOTE_READ_CHUNK]; /* bytes received with their fds, not yet fed to `rd` */
        size_t in_off, in_len;
        int fds[ZYGOTE_MAX_FDS]; /* received fds in arrival order */
        size_t nfds;
        struct cv_buf out;
        uint64_t started_at;
        uint64_t restart_at; /* monotonic ns, 0 = none */
};

/* The agent's end of the spawner (spawner.h). */
struct spawner {
        pid_t pid;
        int fd;    /* socketpair to it, -1 once closed */
        bool lost; /* it died or broke the channel: the agent shuts down */
};

#define BOOT_MAX_STAMPS 32

struct boot_stamp {
        char name[64];
        uint64_t ns;
};

/* What user code's AF_INET/AF_INET6 sockets may reach (--network). */
enum user_net {
        USER_NET_NONE,     /* no such socket: the default, and dev mode's on a networked host */
        USER_NET_LOOPBACK, /* sockets, where no interface but lo is up (a guest without NIC) */
        USER_NET_ALLOW,    /* sockets, and whatever the machine's interfaces reach */
};

struct agent {
        int epfd;
        struct watch sig;
        struct listener *listeners;
        struct watch egress;              /* the guest's egress proxy listener (egress.c) */
        struct egress_wait *egress_waits; /* EGRESS_ACCEPTs waiting for a guest connection */
        struct conn *conns;
        unsigned next_conn_num;
        struct context *contexts; /* includes removed ones still dying */
        unsigned ncontexts;       /* not removed */
        char default_ctx[UUID_TEXT_LEN + 1];
        struct zygote zyg;
        struct spawner spawner;
        const char *executor;
        const char *preload;
        const char *workdir;
        uint32_t next_internal_id;
        uint32_t next_spawn_id;
        struct boot_stamp boot[BOOT_MAX_STAMPS];
        size_t nboot;
        bool stopping;
        int init_signal;       /* SHUTDOWN accepted: signal PID 1 once the reply is flushed */
        struct cv_buf scratch; /* reusable encoding space */
        /* Isolation (confine_agent.c). */
        const char *cgroup_parent;       /* NULL: no per-context cgroups, rlimits only */
        char commands_cgroup_procs[512]; /* cgroup.procs of the commands' cgroup, "" = none */
        struct cgroup_limits limits;
        uint64_t file_size_max;        /* RLIMIT_FSIZE of user code, bytes */
        uint64_t output_max;           /* stdout + stderr bytes relayed per execution */
        enum user_net network;         /* user code's AF_INET/AF_INET6 (confine_agent.c) */
        bool allow_local_vsock;        /* test flag: accept vsock peers other than the host */
        bool no_agent_seccomp;         /* debug flag: skip the agent's and the spawner's filters */
        bool disconnect_continues;     /* a disconnect leaves running cells running */
        const char *isolation_caps[4]; /* extra HELLO capabilities */
        size_t nisolation_caps;
        /* Snapshots (generation.c, vmfork.c; docs/SNAPSHOTS.md). */
        uint64_t generation;      /* the host's number for this copy of the guest; 1 at boot */
        bool awaiting_generation; /* SNAPSHOT_PREPARE answered: user work waits for the next */
        uint64_t epoch;           /* X_EXECUTE/Z_SPAWN carry it: a change makes executors reseed */
        struct watch vmfork;      /* the kernel log, for the vmgenid driver's VM-fork notice */
};

/* --- loop.c --- */
uint64_t now_mono(void);
uint64_t now_boottime(void);
/* Sets the epoll interest of `w` (0 removes it from the set). Returns 0 or -errno. */
int watch_set(struct agent *a, struct watch *w, uint32_t events);
/* Removes `w` from the epoll set and closes its fd. */
void watch_close(struct agent *a, struct watch *w);
int loop_run(struct agent *a);
/* The signals the loop reads from its signalfd (blocked in the agent; children unblock them). */
int loop_signals(sigset_t *set);

/* --- confine_agent.c --- */
/* Decides the user-code policy (sandbox user, limits, network) and hands it to the
 * zygote's environment; sets up the cgroup parent or logs the fallback. Returns 0 or -errno. */
int confine_agent_setup(struct agent *a);
/* After setup: keeps only the capabilities serving needs (agent_caps.c). 0 or -errno. */
int agent_drop_capabilities(void);
/* Creates the context's cgroup (no-op without cgroups). */
void confine_context_created(struct agent *a, struct context *ctx);
/* Moves a new executor into its context's cgroup before it runs any cell. Returns 0 or -errno. */
int confine_context_adopt(struct agent *a, struct context *ctx, pid_t pid);
/* Kills every process of the context (cgroup.kill); false if there is no cgroup. */
bool confine_context_kill(struct agent *a, struct context *ctx);
void confine_context_removed(struct agent *a, struct context *ctx);

/* The policy's name ("none", "loopback", "allow"), as --network and HELLO spell it. */
const char *user_net_name(enum user_net p);

/* --- netif.c --- */
/* How many interfaces other than loopback are up in this network namespace; their
 * names, space-separated, in `names` (truncated to `size`). Or -errno. */
int netif_others_up(char *names, size_t size);

/* --- agent_seccomp.c --- */
/* Loads the agent's own syscall allowlist: after it, no fork, exec or socket. 0 or -errno. */
int agent_seccomp_apply(void);
/* Loads the spawner's filter, inherited by the zygote and commands: the syscalls no process
 * of the guest's user side needs fail with EPERM. Returns 0 or -errno. */
int spawner_seccomp_apply(void);

/* --- boot.c --- */
void boot_stamp(struct agent *a, const char *name, uint64_t ns);
void boot_stamps_from_env(struct agent *a);

/* --- vmfork.c --- */
/* Watches `path` (the kernel log, /dev/kmsg) for the kernel's VM-fork notice: each one
 * starts a new epoch. Opened during setup (the agent's filter allows reading it later).
 * Returns 0 or -errno (the agent then runs without the watch). */
int vmfork_watch_open(struct agent *a, const char *path);
/* Reads what the kernel logged since (without waiting): called before a cell or a spawn
 * goes out, so a notice already logged counts even if epoll has not reported it yet. */
void vmfork_check(struct agent *a);
void vmfork_watch_close(struct agent *a);

/* --- listen.c --- */
int listener_add(struct agent *a, const char *addr);
void listeners_close(struct agent *a);
/* A listening TCP socket on HOST:PORT, HOST a loopback address; `bound` gets
 * "tcp:HOST:PORT" with the real port. The fd, or -errno. */
int listen_tcp_loopback(const char *hostport, char *bound, size_t bound_size);
void listeners_timers(struct agent *a, uint64_t now, uint64_t *next);
/* The serial port's connection closed: reopen the port shortly. */
void serial_hung_up(struct listener *l);

/* --- conn.c --- */
struct conn *conn_new(struct agent *a, int fd, enum transport kind);
void conn_close(struct agent *a, struct conn *c, const char *why);
/* Flushes connections with new output and parses requests left in read buffers.
 * Returns true if work remains (poll without sleeping). */
bool conn_flush_dirty(struct agent *a);
/* Marks output appended to `c` so the loop flushes it. */
void conn_touch(struct conn *c);
bool conn_over_high_water(const struct conn *c);
/* Cancels every in-flight request of `c` without sending anything (disconnect). */
void conn_drop_inflight(struct agent *a, struct conn *c);
void conn_send_error(struct agent *a, struct conn *c, uint32_t id, const char *code,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* --- requests.c --- */
void request_dispatch(struct agent *a, struct conn *c, uint16_t type, uint32_t id,
                      const uint8_t *body, size_t len);

/* --- language.c --- */
/* The canonical name of language or alias `s` (case-insensitive), or NULL if unknown. */
const char *language_canonical(const char *s, size_t n);
/* The known names and aliases, as text for an error message. */
void language_names(char *out, size_t size);

/* --- context.c --- */
/* `language` is a canonical name (language_canonical). */
struct context *context_new(struct agent *a, const char *cwd, const char *language, int *err);
/* The default context of `language`, created (in the workdir) on first use; NULL with *err set. */
struct context *context_for_language(struct agent *a, const char *language, int *err);
/* Creates the default context of `language` with no process until its first execution:
 * listed from the start, as E2B lists its JavaScript context, without a Node.js start
 * for sandboxes that never run JavaScript. NULL with *err set. */
struct context *context_dormant(struct agent *a, const char *language, int *err);
struct context *context_find(struct agent *a, const char *id, size_t len);
void context_spawn(struct agent *a, struct context *ctx);
/* The executor the zygote spawned came with its own ends (a warm spare): `fds` (control
 * socket, stdout, stderr) replace the ones the context made; taken over either way. */
int context_adopt_fds(struct agent *a, struct context *ctx, const int fds[3]);
/* The zygote answered the context's Z_SPAWN (after any context_adopt_fds). */
void context_spawned(struct agent *a, struct context *ctx);
void context_restart(struct agent *a, struct context *ctx);
void context_remove(struct agent *a, struct context *ctx);
/* The executor with `pid` was reaped; returns true if it belonged to a context. */
bool context_reaped(struct agent *a, pid_t pid, int status);
void contexts_timers(struct agent *a, uint64_t now, uint64_t *next);
void context_update_interest(struct agent *a, struct context *ctx);
void contexts_kill_all(struct agent *a);
/* Handles executor messages left in read buffers; true if some remain (poll again at once). */
bool contexts_pending_work(struct agent *a);

/* --- execution.c --- */
void exec_enqueue(struct agent *a, struct context *ctx, struct exec *e);
void exec_start_next(struct agent *a, struct context *ctx);
void exec_cancel(struct agent *a, struct exec *e, bool notify);
void exec_interrupt(struct agent *a, struct context *ctx);
void exec_finish(struct agent *a, struct exec *e, const uint8_t *xend_body, size_t len);
void exec_died(struct agent *a, struct exec *e, const char *why);
void exec_free(struct exec *e);
void exec_relay(struct agent *a, struct exec *e, uint16_t type, const uint8_t *body, size_t len);
/* A STREAM the executor sent itself (the JavaScript driver's console output): relayed
 * under the same per-execution output cap as the pipes' bytes. */
void exec_stream_message(struct agent *a, struct exec *e, const uint8_t *body, size_t len);
void exec_stream(struct agent *a, struct context *ctx, int which, const uint8_t *p, size_t n,
                 bool final);
void exec_detach_conn(struct exec *e);

/* --- zygote.c --- */
int zygote_start(struct agent *a);
int zygote_spawn(struct agent *a, struct context *ctx, int ctl_fd, int out_fd, int err_fd);
bool zygote_reaped(struct agent *a, pid_t pid, int status);
void zygote_timers(struct agent *a, uint64_t now, uint64_t *next);
void zygote_stop(struct agent *a);

/* Formats a wait status as "exited with status N" / "killed by signal N (NAME)". */
void describe_status(int status, char *out, size_t size);

#endif
