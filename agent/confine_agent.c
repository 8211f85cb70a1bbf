/*
 * The agent's side of confinement: who user code runs as, its limits and
 * network policy (handed to the zygote in CONFINE_ENV, applied by each executor
 * after fork), and the per-context cgroups, or the rlimit fallback without them.
 */

#include "confine_agent.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../confine/confine.h"
#include "agent.h"
#include "cgroup.h"
#include "context.h"
#include "log.h"
#include "netif.h"

#define SANDBOX_USER "user"
#define SANDBOX_FALLBACK_ID 1000
#define DEFAULT_PIDS_MAX 1024u
#define DEFAULT_NOFILE 8192u
#define DEFAULT_CPU_WEIGHT 100u
/* Memory kept out of reach of user code for the agent, init and the kernel. */
#define MEM_RESERVE_MIN (128ull << 20)

static void add_cap(struct agent *a, const char *cap)
{
        if (a->nisolation_caps < sizeof(a->isolation_caps) / sizeof(a->isolation_caps[0]))
                a->isolation_caps[a->nisolation_caps++] = cap;
}

static void sandbox_user(struct confine_policy *p)
{
        if (geteuid() != 0)
                return; /* dev mode: user code keeps the agent's uid */
        struct passwd *pw = getpwnam(SANDBOX_USER);
        p->drop_user = true;
        p->uid = pw && pw->pw_uid ? pw->pw_uid : SANDBOX_FALLBACK_ID;
        p->gid = pw && pw->pw_gid ? pw->pw_gid : SANDBOX_FALLBACK_ID;
}

static void default_limits(struct agent *a)
{
        uint64_t total = cgroup_mem_total();
        uint64_t reserve = total / 8 > MEM_RESERVE_MIN ? total / 8 : MEM_RESERVE_MIN;
        if (!a->limits.memory_max && total > 2 * reserve)
                a->limits.memory_max = total - reserve;
        if (!a->limits.pids_max)
                a->limits.pids_max = DEFAULT_PIDS_MAX;
        if (!a->limits.cpu_weight)
                a->limits.cpu_weight = DEFAULT_CPU_WEIGHT;
}

/* The agent must be the last thing the OOM killer picks. */
static void protect_from_oom(void)
{
        FILE *f = fopen("/proc/self/oom_score_adj", "we");
        if (!f)
                return;
        /* A container may refuse it (no CAP_SYS_RESOURCE): not fatal, just less safe. */
        int rc = fputs("-1000", f) < 0 ? errno : 0;
        if (fclose(f) != 0 && rc == 0)
                rc = errno;
        if (rc)
                log_info("isolation: oom_score_adj -1000 refused: %s", strerror(rc));
}

/*
 * Commands (section 10) share one cgroup, <parent>/ctx-commands, with the
 * contexts' limits: with cgroups on, the policy drops RLIMIT_NPROC/DATA, so
 * outside a cgroup a command would be bounded by nothing. Each command's
 * child joins it before exec (commands.c).
 */
static void setup_commands_cgroup(struct agent *a, const char *parent)
{
        int rc = cgroup_context_create(parent, "commands", &a->limits);
        int n = snprintf(a->commands_cgroup_procs, sizeof(a->commands_cgroup_procs),
                         "%s/ctx-commands/cgroup.procs", parent);
        if (rc < 0 || n < 0 || (size_t)n >= sizeof(a->commands_cgroup_procs)) {
                log_error("isolation: cgroup for commands under %s: %s; commands are refused",
                          parent, rc < 0 ? strerror(-rc) : "path too long");
                snprintf(a->commands_cgroup_procs, sizeof(a->commands_cgroup_procs), "-");
        }
}

static void setup_cgroups(struct agent *a)
{
        const char *parent = getenv("CELLVM_USER_CGROUP");
        char why[PATH_MAX + 128];
        if (geteuid() != 0) {
                snprintf(why, sizeof(why), "the agent is not root");
        } else if (!parent || !parent[0]) {
                snprintf(why, sizeof(why), "CELLVM_USER_CGROUP is not set");
        } else if (cgroup_parent_setup(parent, why, sizeof(why)) == 0) {
                a->cgroup_parent = parent;
                log_info("isolation: per-context cgroups under %s (memory.max %llu, pids.max "
                         "%llu, cpu.weight %llu)",
                         parent, (unsigned long long)a->limits.memory_max,
                         (unsigned long long)a->limits.pids_max,
                         (unsigned long long)a->limits.cpu_weight);
                add_cap(a, "cgroups");
                setup_commands_cgroup(a, parent);
                return;
        }
        log_warn("isolation: no per-context cgroups (%s); user code is bounded by rlimits only "
                 "(RLIMIT_DATA %llu, RLIMIT_NPROC %llu per user)",
                 why, (unsigned long long)a->limits.memory_max,
                 (unsigned long long)a->limits.pids_max);
        add_cap(a, "rlimits_only");
}

/*
 * User code must be able to write in its working directory. A root-owned
 * --workdir that others cannot write (a root agent on a developer's host, tests)
 * is given to the sandbox user; in the guest /home/user is the user's already.
 */
static void give_workdir(const struct agent *a, const struct confine_policy *p)
{
        struct stat st;
        if (!a->workdir || strcmp(a->workdir, "/") == 0 || stat(a->workdir, &st) < 0 ||
            !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & S_IWOTH))
                return;
        if (chown(a->workdir, p->uid, p->gid) < 0)
                log_warn("isolation: chown %s to uid %u: %s", a->workdir, (unsigned)p->uid,
                         strerror(errno));
        else
                log_info("isolation: workdir %s now belongs to uid %u", a->workdir,
                         (unsigned)p->uid);
}

const char *user_net_name(enum user_net p)
{
        return p == USER_NET_ALLOW ? "allow" : p == USER_NET_LOOPBACK ? "loopback" : "none";
}

/* `loopback` holds only where sockets reach nothing but this machine: else `none`. */
static void check_loopback_only(struct agent *a)
{
        char names[256];
        if (a->network != USER_NET_LOOPBACK)
                return;
        int n = netif_others_up(names, sizeof(names));
        if (n == 0)
                return;
        if (n < 0)
                log_error("isolation: --network loopback: listing interfaces: %s; network none",
                          strerror(-n));
        else
                log_error("isolation: --network loopback: interface(s) other than lo up (%s): user "
                          "code could reach beyond this machine; network none",
                          names);
        a->network = USER_NET_NONE;
}

int confine_agent_setup(struct agent *a)
{
        struct confine_policy p = {0};
        sandbox_user(&p);
        default_limits(a);
        setup_cgroups(a);
        check_loopback_only(a);
        p.net_none = a->network == USER_NET_NONE;
        p.agent_pid = getpid();
        p.fsize = a->file_size_max;
        p.nofile = DEFAULT_NOFILE;
        p.nproc = a->cgroup_parent ? 0 : a->limits.pids_max;
        p.data = a->cgroup_parent ? 0 : a->limits.memory_max;
        char text[CONFINE_TEXT_MAX];
        int rc = confine_policy_format(&p, text, sizeof(text));
        if (rc < 0)
                return rc;
        /* The zygote and every executor inherit the environment. */
        if (setenv(CONFINE_ENV, text, 1) < 0)
                return -errno;
        if (geteuid() == 0)
                protect_from_oom();
        add_cap(a, "seccomp");
        if (p.drop_user) {
                add_cap(a, "sandbox_user");
                give_workdir(a, &p);
        }
        if (p.drop_user)
                log_info("isolation: user code runs as uid %u gid %u, network %s", (unsigned)p.uid,
                         (unsigned)p.gid, user_net_name(a->network));
        else
                log_warn("isolation: the agent is not root: user code keeps uid %u (seccomp "
                         "and rlimits still apply), network %s",
                         (unsigned)geteuid(), user_net_name(a->network));
        return 0;
}

void confine_context_created(struct agent *a, struct context *ctx)
{
        if (!a->cgroup_parent)
                return;
        int rc = cgroup_context_create(a->cgroup_parent, ctx->id, &a->limits);
        if (rc < 0)
                log_error("context %s: creating its cgroup: %s; it runs without one", ctx->id,
                          strerror(-rc));
        ctx->cgroup = rc == 0;
}

int confine_context_adopt(struct agent *a, struct context *ctx, pid_t pid)
{
        if (!ctx->cgroup || pid <= 0)
                return 0;
        return cgroup_context_add(a->cgroup_parent, ctx->id, pid);
}

bool confine_context_kill(struct agent *a, struct context *ctx)
{
        if (!ctx->cgroup)
                return false;
        int rc = cgroup_context_kill(a->cgroup_parent, ctx->id);
        if (rc < 0)
                log_error("context %s: cgroup.kill: %s", ctx->id, strerror(-rc));
        return rc == 0;
}

void confine_context_removed(struct agent *a, struct context *ctx)
{
        if (!ctx->cgroup)
                return;
        int rc = cgroup_context_remove(a->cgroup_parent, ctx->id);
        if (rc < 0)
                log_warn("context %s: removing its cgroup: %s", ctx->id, strerror(-rc));
        ctx->cgroup = false;
}
