/* cellvm-agent: serves the cellvm protocol (docs/PROTOCOL.md) to host clients. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/parse_num.h"
#include "agent.h"
#include "agent_caps.h"
#include "agent_seccomp.h"
#include "boot.h"
#include "commands.h"
#include "confine_agent.h"
#include "conn.h"
#include "context.h"
#include "egress.h"
#include "listen.h"
#include "log.h"
#include "loop.h"
#include "requests.h"
#include "spawner.h"
#include "system.h"
#include "vmfork.h"
#include "zygote.h"

#define DEFAULT_PRELOAD "numpy,pandas,matplotlib,matplotlib.pyplot"
#define MAX_LISTEN 16
/* stdout + stderr bytes relayed per execution before the truncation notice. */
#define DEFAULT_OUTPUT_MAX (64ull << 20)
/* Where the kernel logs that the VM generation ID changed (vmfork.c). */
#define DEFAULT_VMFORK_LOG "/dev/kmsg"
/* The guest's HTTP proxy address (docs/NETWORK.md). */
#define DEFAULT_EGRESS "tcp:127.0.0.1:3128"

static void usage(FILE *f)
{
        fprintf(
            f,
            "usage: cellvm-agent --listen ADDR [--listen ADDR ...] --workdir DIR\n"
            "                    [--executor PATH] [--preload LIST] [--log-level LEVEL]\n"
            "\n"
            "Serves the cellvm protocol (docs/PROTOCOL.md) until SIGTERM or SIGINT.\n"
            "\n"
            "  --listen ADDR      unix:PATH              Unix stream socket (created; removed at "
            "exit)\n"
            "                     vsock:PORT             AF_VSOCK stream socket, any CID\n"
            "                     tcp:127.0.0.1:PORT     loopback TCP, development only\n"
            "                                            (other addresses are refused)\n"
            "                     serial:PATH            a virtio-serial port: one stream, "
            "reopened\n"
            "                                            after a hang-up\n"
            "  --workdir DIR      working directory of new contexts (default: the current one)\n"
            "  --executor PATH    the executor binary (default: cellvm-executor next to this one)\n"
            "  --preload LIST     modules the zygote imports, comma-separated; \"\" for none\n"
            "                     (default: " DEFAULT_PRELOAD ")\n"
            "  --log-level LEVEL  error, warn, info (default) or debug\n"
            "  --egress ADDR      tcp:127.0.0.1:PORT, the guest's HTTP proxy address whose\n"
            "                     connections go to the host (EGRESS_ACCEPT), or none;\n"
            "                     default tcp:127.0.0.1:3128 under cellvm-init, else none\n"
            "  --network POLICY   user code's AF_INET/AF_INET6 sockets: none (no such socket),\n"
            "                     loopback (allowed where no interface but lo is up, else\n"
            "                     none) or allow; default none, and under cellvm-init loopback\n"
            "                     without a NIC, allow with one (its CELLVM_NET)\n"
            "  --memory-max SIZE  memory of each context (K/M/G suffixes; default: RAM - 1/8)\n"
            "  --pids-max N       processes of each context (default 1024)\n"
            "  --cpu-weight N     cpu.weight of each context (default 100)\n"
            "  --file-size-max SIZE  largest file user code may write (RLIMIT_FSIZE)\n"
            "  --output-max SIZE  stdout+stderr relayed per execution (default 64M)\n"
            "  --allow-local-vsock  accept vsock peers other than the host (CID 2); tests only\n"
            "  --no-agent-seccomp   load neither the agent's nor the spawner's seccomp filter "
            "(debugging)\n"
            "  --on-disconnect WHAT  interrupt (default) or continue the running cells of a\n"
            "                     connection that closes\n"
            "  --vmfork-log PATH  the kernel log watched for the VM-fork notice of the vmgenid\n"
            "                     driver (default " DEFAULT_VMFORK_LOG
            "; a FIFO in its format: tests)\n"
            "  --help             this text\n");
}

/* cellvm-init's CELLVM_NET (from cellvm.net): without a NIC user code's sockets
 * reach only the guest (loopback), with eth0 the network; else (dev mode) none. */
static enum user_net network_from_init(const char *net)
{
        if (net && strcmp(net, "loopback") == 0)
                return USER_NET_LOOPBACK;
        if (net && strcmp(net, "static") == 0)
                return USER_NET_ALLOW;
        return USER_NET_NONE;
}

static int isolation_option(struct agent *a, int opt, const char *arg)
{
        uint64_t v = 0;
        switch (opt) {
        case 'N':
                if (strcmp(arg, "none") == 0)
                        a->network = USER_NET_NONE;
                else if (strcmp(arg, "loopback") == 0)
                        a->network = USER_NET_LOOPBACK;
                else if (strcmp(arg, "allow") == 0)
                        a->network = USER_NET_ALLOW;
                else
                        return -EINVAL;
                return 0;
        case 'V':
                a->allow_local_vsock = true;
                return 0;
        case 'S':
                a->no_agent_seccomp = true;
                return 0;
        case 'D':
                if (strcmp(arg, "interrupt") != 0 && strcmp(arg, "continue") != 0)
                        return -EINVAL;
                a->disconnect_continues = strcmp(arg, "continue") == 0;
                return 0;
        }
        if (parse_size(arg, &v) < 0 || v == 0)
                return -EINVAL;
        if (opt == 'M')
                a->limits.memory_max = v;
        else if (opt == 'P')
                a->limits.pids_max = v;
        else if (opt == 'W' && v <= 10000)
                a->limits.cpu_weight = v;
        else if (opt == 'F')
                a->file_size_max = v;
        else if (opt == 'O')
                a->output_max = v;
        else
                return -EINVAL;
        return 0;
}

/* The index in `opts` of the option whose value is `val` (for messages). */
static size_t optind_last(const struct option *opts, int val)
{
        size_t i = 0;
        while (opts[i].name && opts[i].val != val)
                i++;
        return i;
}

static char *default_executor(void)
{
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n < 0) {
                log_error("readlink /proc/self/exe: %s", strerror(errno));
                return NULL;
        }
        self[n] = 0;
        const char *dir = dirname(self);
        size_t len = strlen(dir) + sizeof("/cellvm-executor");
        char *path = malloc(len);
        if (path)
                snprintf(path, len, "%s/cellvm-executor", dir);
        return path;
}

static void shutdown_agent(struct agent *a)
{
        a->stopping = true;
        while (a->conns)
                conn_close(a, a->conns, "agent shutting down");
        contexts_kill_all(a);
        zygote_stop(a);
        listeners_close(a);
        egress_close(a);
        spawner_stop(a);
        vmfork_watch_close(a);
        /* Reap what the subreaper inherited, without waiting forever for daemons. */
        for (int i = 0; i < 100; i++) {
                pid_t pid = waitpid(-1, NULL, WNOHANG);
                if (pid < 0)
                        break;
                if (pid == 0) {
                        struct timespec ts = {0, 10000000};
                        nanosleep(&ts, NULL);
                }
        }
        cv_buf_free(&a->scratch);
        /* The signalfd exists once the loop ran; setup failures get here without it. */
        if ((a->sig.fd >= 0 && close(a->sig.fd) < 0) || close(a->epfd) < 0)
                log_warn("close: %s", strerror(errno));
}

/* --workdir: created (with its parents, 0755) when missing, then made absolute
 * into `out`, since contexts chdir into it and relative file paths resolve
 * against it. Returns 0 or -errno. */
static int prepare_workdir(const char *dir, char *out, size_t size)
{
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
                return -ENAMETOOLONG;
        for (char *p = path + 1;; p++) {
                bool end = *p == '\0';
                if (*p != '/' && !end)
                        continue;
                *p = '\0';
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        return -errno;
                if (end)
                        break;
                *p = '/';
        }
        struct stat st;
        if (stat(dir, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (size < PATH_MAX || !realpath(dir, out))
                return size < PATH_MAX ? -ENAMETOOLONG : -errno;
        return 0;
}

/* After a flush, so a shutdown's OK reaches the host before PID 1 acts on it. */
static bool signal_init_after_flush(struct agent *a)
{
        system_signal_init(a);
        return false;
}

/* What the loop calls back (loop.h), so that it names no service. */
static int register_loop_hooks(void)
{
        int rc = 0;
        /* Child exits: the spawner, the zygote, executors (adopted: PR_SET_CHILD_SUBREAPER),
         * commands. */
        if ((rc = loop_on_reap(spawner_reaped)) < 0 || (rc = loop_on_reap(zygote_reaped)) < 0 ||
            (rc = loop_on_reap(context_reaped)) < 0 || (rc = loop_on_reap(commands_reaped)) < 0)
                return rc;
        if ((rc = loop_on_timer(contexts_timers)) < 0 || (rc = loop_on_timer(zygote_timers)) < 0 ||
            (rc = loop_on_timer(commands_timers)) < 0 || (rc = loop_on_timer(listeners_timers)) < 0)
                return rc;
        /* Queued cells start, then what is queued for the peers is written, then init is told. */
        if ((rc = loop_before_wait(contexts_pending_work)) < 0 ||
            (rc = loop_before_wait(conn_flush_dirty)) < 0 ||
            (rc = loop_before_wait(signal_init_after_flush)) < 0)
                return rc;
        return loop_on_stop(commands_kill_all);
}

int main(int argc, char **argv)
{
        static struct agent agent;
        struct agent *a = &agent;
        uint64_t start = now_boottime();
        const char *listen_addrs[MAX_LISTEN];
        size_t nlisten = 0;
        char *executor_alloc = NULL;
        a->preload = DEFAULT_PRELOAD;
        a->output_max = DEFAULT_OUTPUT_MAX;
        a->workdir = NULL;
        a->sig.fd = -1;
        a->zyg.w.fd = -1;
        a->spawner.fd = -1;
        a->egress.fd = -1;
        a->network = network_from_init(getenv("CELLVM_NET")); /* --network overrides */
        a->vmfork.fd = -1;
        /* A guest booted normally is generation 1 (docs/SNAPSHOTS.md). */
        a->generation = 1;
        a->epoch = 1;
        const char *vmfork_log = DEFAULT_VMFORK_LOG;
        const char *egress_addr = system_under_init() ? DEFAULT_EGRESS : "none";

        static const struct option opts[] = {
            {"listen", required_argument, NULL, 'l'},
            {"workdir", required_argument, NULL, 'w'},
            {"executor", required_argument, NULL, 'e'},
            {"preload", required_argument, NULL, 'p'},
            {"log-level", required_argument, NULL, 'v'},
            {"help", no_argument, NULL, 'h'},
            {"network", required_argument, NULL, 'N'},
            {"memory-max", required_argument, NULL, 'M'},
            {"pids-max", required_argument, NULL, 'P'},
            {"cpu-weight", required_argument, NULL, 'W'},
            {"file-size-max", required_argument, NULL, 'F'},
            {"output-max", required_argument, NULL, 'O'},
            {"allow-local-vsock", no_argument, NULL, 'V'},
            {"no-agent-seccomp", no_argument, NULL, 'S'},
            {"on-disconnect", required_argument, NULL, 'D'},
            {"vmfork-log", required_argument, NULL, 'K'},
            {"egress", required_argument, NULL, 'G'},
            {NULL, 0, NULL, 0},
        };
        int opt;
        while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (opt) {
                case 'l':
                        if (nlisten == MAX_LISTEN) {
                                fprintf(stderr, "cellvm-agent: at most %d --listen\n", MAX_LISTEN);
                                return 2;
                        }
                        listen_addrs[nlisten++] = optarg;
                        break;
                case 'w':
                        a->workdir = optarg;
                        break;
                case 'e':
                        a->executor = optarg;
                        break;
                case 'p':
                        a->preload = optarg;
                        break;
                case 'K':
                        vmfork_log = optarg;
                        break;
                case 'G':
                        egress_addr = optarg;
                        break;
                case 'v':
                        if (log_level_parse(optarg, &log_threshold) < 0) {
                                fprintf(stderr, "cellvm-agent: unknown log level %s\n", optarg);
                                return 2;
                        }
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'N':
                case 'M':
                case 'P':
                case 'W':
                case 'F':
                case 'O':
                case 'V':
                case 'S':
                case 'D':
                        if (isolation_option(a, opt, optarg) < 0) {
                                fprintf(stderr, "cellvm-agent: bad value for --%s: %s\n",
                                        opts[optind_last(opts, opt)].name, optarg);
                                return 2;
                        }
                        break;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind != argc || nlisten == 0) {
                usage(stderr);
                return 2;
        }
        static char cwd[PATH_MAX];
        if (!a->workdir) {
                if (!getcwd(cwd, sizeof(cwd))) {
                        log_error("getcwd: %s", strerror(errno));
                        return 1;
                }
                a->workdir = cwd;
        } else {
                int wrc = prepare_workdir(a->workdir, cwd, sizeof(cwd));
                if (wrc < 0) {
                        log_error("--workdir %s: %s", a->workdir, strerror(-wrc));
                        return 1;
                }
                a->workdir = cwd;
        }
        if (!a->executor) {
                executor_alloc = default_executor();
                if (!executor_alloc)
                        return 1;
                a->executor = executor_alloc;
        }
        if (access(a->executor, X_OK) < 0) {
                log_error("executor %s: %s", a->executor, strerror(errno));
                return 1;
        }

        boot_stamp(a, "agent_start", start);
        boot_stamps_from_env(a);
        cv_buf_init(&a->scratch);
        signal(SIGPIPE, SIG_IGN);
        /* Executors are grandchildren of the zygote; adopt them to see their exits. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
                log_error("prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
                return 1;
        }
        int rc = register_loop_hooks();
        if (rc < 0) {
                log_error("registering the loop's hooks: %s", strerror(-rc));
                return 1;
        }
        requests_register();
        contexts_register();
        /* Block the loop's signals before the first fork so none is lost. */
        sigset_t set;
        loop_signals(&set);
        if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
                log_error("sigprocmask: %s", strerror(errno));
                return 1;
        }
        a->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (a->epfd < 0) {
                log_error("epoll_create1: %s", strerror(errno));
                return 1;
        }
        rc = confine_agent_setup(a);
        if (rc < 0) {
                log_error("isolation setup: %s", strerror(-rc));
                return 1;
        }
        /* The spawner starts the agent's children: forked before the first, since the
         * agent's filter will forbid fork (spawner.h). */
        static const struct spawner_children children = {.zygote = zygote_child_exec,
                                                         .command = command_child_exec};
        if ((rc = spawner_start(a, &children)) < 0) {
                log_error("starting the spawner: %s", strerror(-rc));
                shutdown_agent(a);
                free(executor_alloc);
                return 1;
        }
        /* Listening before the zygote starts: a client's connect waits in the backlog
         * while the rest is set up. After the spawner's fork, which must not
         * inherit the listening sockets. */
        for (size_t i = 0; i < nlisten; i++) {
                rc = listener_add(a, listen_addrs[i]);
                if (rc < 0) {
                        log_error("--listen %s: %s", listen_addrs[i],
                                  rc == -EADDRNOTAVAIL ? "tcp is for loopback addresses only"
                                  : rc == -EINVAL      ? "not an address this agent understands"
                                                       : strerror(-rc));
                        shutdown_agent(a);
                        free(executor_alloc);
                        return 1;
                }
                if (strncmp(listen_addrs[i], "tcp:", 4) == 0 && a->network != USER_NET_NONE)
                        log_warn("--listen %s with --network %s: user code can connect to the "
                                 "agent (docs/SECURITY.md)",
                                 listen_addrs[i], user_net_name(a->network));
        }
        /* The guest's proxy address: a socket made before the agent's filter. */
        if (strcmp(egress_addr, "none") != 0 && (rc = egress_listen(a, egress_addr)) < 0) {
                log_error("--egress %s: %s", egress_addr,
                          rc == -EINVAL ? "expected tcp:127.0.0.1:PORT or none" : strerror(-rc));
                shutdown_agent(a);
                free(executor_alloc);
                return 1;
        }
        boot_stamp(a, "agent_listening", now_boottime());
        /* Before the filter and the capability drop: reading the kernel log may need
         * CAP_SYSLOG to open; the fd keeps working. Not fatal: a dev host may refuse. */
        if ((rc = vmfork_watch_open(a, vmfork_log)) < 0)
                log_msg(system_under_init() ? LOG_WARN : LOG_INFO,
                        "not watching %s for VM forks (%s): only NEW_GENERATION makes "
                        "executors reseed",
                        vmfork_log, strerror(-rc));
        rc = zygote_start(a);
        if (rc < 0) {
                log_error("starting the zygote (%s): %s", a->executor, strerror(-rc));
                shutdown_agent(a);
                free(executor_alloc);
                return 1;
        }
        int err = 0;
        struct context *def = context_for_language(a, "python", &err);
        if (!def) {
                log_error("creating the default context: %s", strerror(-err));
                shutdown_agent(a);
                free(executor_alloc);
                return 1;
        }
        memcpy(a->default_ctx, def->id, sizeof(a->default_ctx));
        /* E2B's sandboxes list a JavaScript context beside Python's: so does this one,
         * started by its first execution (docs/JAVASCRIPT.md). */
        if (!context_dormant(a, "javascript", &err))
                log_error("creating the default javascript context: %s", strerror(-err));
        /* Setup is done: from here on the agent needs none of this (agent_caps.c,
         * agent_seccomp.c). */
        if ((rc = agent_drop_capabilities()) < 0) {
                log_error("dropping the agent's capabilities: %s", strerror(-rc));
                shutdown_agent(a);
                free(executor_alloc);
                return 1;
        }
        /* Non-dumpable: /proc/<agent>/fd and friends are root's alone. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                log_warn("prctl(PR_SET_DUMPABLE): %s", strerror(errno));
        /* The allowlist (agent_seccomp.c): no fork, exec or new sockets from here on. */
        if (!a->no_agent_seccomp && (rc = agent_seccomp_apply()) < 0) {
                log_error("loading the agent's seccomp filter: %s", strerror(-rc));
                shutdown_agent(a);
                free(executor_alloc);
                return 1;
        }
        boot_stamp(a, "agent_ready", now_boottime());
        log_info("ready: pid %d, default context %s, workdir %s", (int)getpid(), a->default_ctx,
                 a->workdir);
        rc = loop_run(a);
        bool lost = a->spawner.lost;
        shutdown_agent(a);
        free(executor_alloc);
        log_info("stopped");
        /* Without its spawner the agent cannot start processes: exit for init to restart it. */
        return rc < 0 || lost ? 1 : 0;
}
