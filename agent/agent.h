/*
 * cellvm-agent: the state its parts share. One single-threaded epoll loop
 * (loop.h) drives connections (conn.h, requests.h), contexts with their
 * executor processes (context.h, execution.h) and the zygote (zygote.h); each
 * part's own types and functions are in its own header.
 */
#ifndef CELLVM_AGENT_H
#define CELLVM_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "boot.h"
#include "buf.h"
#include "cgroup.h"
#include "confine_agent.h"
#include "loop.h"
#include "spawner.h"
#include "uuid.h"
#include "zygote.h"

#define AGENT_VERSION "0.1.0"

struct conn;
struct context;
struct egress_wait;
struct listener;

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

#endif
