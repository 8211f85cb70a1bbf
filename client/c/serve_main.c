/* `cellvm serve`: options, the API key, the template, the listener, and the
 * end: SIGTERM, SIGINT and SIGHUP kill every sandbox this server made (the
 * registry's deadlines cover a server that is SIGKILLed: docs/SERVE.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli_sandboxes.h"
#include "cli_snapshot.h"
#include "serve_http.h"
#include "vmm.h"

struct MHD_Daemon *serve_http_start(const struct sockaddr *addr, int listen_fd,
                                    unsigned client_timeout_s, char *err, size_t errlen);

static const char serve_usage[] =
    "usage: cellvm serve [--listen HOST:PORT] [--unix PATH] [--image DIR] [--pool N]\n"
    "                    [--domain NAME] [--memory MB] [--vcpus N] [--single]\n"
    "                    [--client-timeout SEC]\n"
    "       cellvm serve --backend agent-sandbox [--namespace NS] [--warm-pool NAME]\n"
    "                    [--router URL] [--pod-port N] [--listen HOST:PORT] [--domain NAME]\n"
    "\n"
    "E2B's protocols on one HTTP/1.1 address, in front of micro-VMs restored from\n"
    "this image's template: E2B's own SDKs (npm e2b, @e2b/code-interpreter, and their\n"
    "PyPI twins) reach it unchanged with three variables:\n"
    "  E2B_API_URL=http://HOST:PORT E2B_SANDBOX_URL=http://HOST:PORT E2B_API_KEY=KEY\n"
    "\n"
    "  --listen HOST:PORT  where to listen (default 127.0.0.1:3000; [::1]:PORT for IPv6)\n"
    "  --unix PATH         listen on this Unix socket instead (made 0600)\n"
    "  --image DIR         the guest image (default $CELLVM_IMAGE, else build/image)\n"
    "  --domain NAME       the domain the SDKs build getHost(port) with, <port>-<id>.NAME\n"
    "                      (default localhost:PORT, which curl and browsers resolve)\n"
    "  --pool N            keep N sandboxes restored and warmed ahead of create (0-64,\n"
    "                      default 0): a create then costs a handshake, not a restore\n"
    "  --memory MB         each sandbox's RAM (default 1024), --vcpus N its CPUs (1)\n"
    "  --client-timeout SEC  close a client connection idle this long, mid-request\n"
    "                      included (1-3600, default 60): slow clients hold no thread\n"
    "  --single            serve one sandbox, a pod's (docs/KUBERNETES.md): restored and\n"
    "                      warmed at start, /health 503 until then and after it ended;\n"
    "                      the first create gets it, any other is a 429\n"
    "  --backend agent-sandbox  the control plane of a cluster (docs/KUBERNETES.md): a\n"
    "                      sandbox is a SandboxClaim on agent-sandbox's warm pool (--warm-pool,\n"
    "                      default cellvm) in --namespace (default: the kubeconfig's or the\n"
    "                      service account's); its traffic goes to its pod's port --pod-port\n"
    "                      (3000), or through agent-sandbox's router (--router URL). Credentials:\n"
    "                      the in-cluster service account, else $KUBECONFIG or ~/.kube/config\n"
    "Templates are kept (and built, once per launch) in $CELLVM_TEMPLATE_DIR, else\n"
    "~/.cache/cellvm/templates: a volume shared by a node's pods; one that does not\n"
    "fit this host is rebuilt beside it.\n"
    "\n"
    "The API key is $CELLVM_API_KEY, else the one in ~/.config/cellvm/api_key, made\n"
    "(0600) and printed on first start. Control-plane requests carry it (X-API-Key, or\n"
    "Authorization: Bearer KEY); sandbox requests carry their sandbox's access token.\n"
    "/mcp serves the MCP tools of `cellvm mcp` (Streamable HTTP, docs/MCP.md).\n"
    "A sandbox has no network unless its create asks for network.allowOut/denyOut:\n"
    "then its processes reach the hosts the rules allow through a proxy this server\n"
    "decides and dials (docs/NETWORK.md); names resolve through $CELLVM_HOSTS (hosts\n"
    "format) first; $CELLVM_EGRESS_MAX_CONNS, _RATE and _IDLE_S bound the streams.\n"
    "GET /health answers 200 once the template is ready (built on first use: about\n"
    "15-50 s under TCG, depending on load). Sandboxes live until DELETE, their\n"
    "timeout (300 s unless asked) or the server's end: SIGTERM, SIGINT or SIGHUP kill\n"
    "them all; a SIGKILLed server leaves them to their deadlines, listed by cellvm ps\n"
    "meanwhile (docs/SERVE.md).\n"
    "Paused sandboxes are kept in $CELLVM_PAUSED_DIR, else $XDG_STATE_HOME/cellvm/paused\n"
    "(~/.local/state/cellvm/paused), E2B's snapshots likewise in $CELLVM_SNAPSHOTS_DIR\n"
    "or .../cellvm/snapshots; both outlive the server.\n";

static int parse_listen(const char *s, struct sockaddr_storage *ss, char *err, size_t errlen)
{
        char host[128];
        /* [IPv6]:PORT: the port's colon is the one after the bracket. */
        const char *close = s[0] == '[' ? strchr(s, ']') : NULL;
        const char *colon =
            s[0] == '[' ? (close && close[1] == ':' ? close + 1 : NULL) : strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= sizeof(host)) {
                snprintf(err, errlen, "--listen %s: HOST:PORT (IPv6: [ADDRESS]:PORT)", s);
                return -EINVAL;
        }
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
        char *end;
        errno = 0;
        unsigned long port = strtoul(colon + 1, &end, 10);
        if (*end || end == colon + 1 || colon[1] < '0' || colon[1] > '9' || errno || port > 65535) {
                snprintf(err, errlen, "--listen %s: the port is 0 to 65535", s);
                return -EINVAL;
        }
        memset(ss, 0, sizeof(*ss));
        size_t hl = strlen(host);
        if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
                host[hl - 1] = '\0';
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
                a->sin6_family = AF_INET6;
                a->sin6_port = htons((uint16_t)port);
                if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1)
                        return 0;
        } else {
                struct sockaddr_in *a = (struct sockaddr_in *)ss;
                a->sin_family = AF_INET;
                a->sin_port = htons((uint16_t)port);
                if (strcmp(host, "localhost") == 0)
                        snprintf(host, sizeof(host), "127.0.0.1");
                if (inet_pton(AF_INET, host, &a->sin_addr) == 1)
                        return 0;
        }
        snprintf(err, errlen, "--listen %s: HOST is an IPv4 address, [IPv6] or localhost", s);
        return -EINVAL;
}

static int listen_unix(const char *path, char *err, size_t errlen)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof(a.sun_path)) {
                snprintf(err, errlen, "--unix %s: path too long", path);
                return -ENAMETOOLONG;
        }
        strcpy(a.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                snprintf(err, errlen, "socket: %s", strerror(errno));
                return -errno;
        }
        struct stat st;
        /* A socket that answers is another server's: only a stale one goes. */
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) &&
            connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
                snprintf(err, errlen, "%s: another server is listening", path);
                close(fd);
                return -EADDRINUSE;
        }
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
                close(fd); /* a failed connect leaves the socket unusable */
                fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        snprintf(err, errlen, "socket: %s", strerror(errno));
                        return -errno;
                }
        }
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && unlink(path) < 0) {
                snprintf(err, errlen, "removing the old %s: %s", path, strerror(errno));
                close(fd);
                return -EEXIST;
        }
        mode_t old = umask(0177);
        int rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
        umask(old);
        if (rc < 0 || listen(fd, 128) < 0) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                close(fd);
                return -errno;
        }
        return fd;
}

/* The TCP listener, made here so that a port in use is said as such and
 * port 0 (any free port) is known: the port is written back into *ss. */
static int listen_tcp(struct sockaddr_storage *ss, const char *where, char *err, size_t errlen)
{
        bool v6 = ss->ss_family == AF_INET6;
        socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                snprintf(err, errlen, "%s: socket: %s", where, strerror(errno));
                return -errno;
        }
        int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (v6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)ss, len) < 0 || listen(fd, 128) < 0 ||
            getsockname(fd, (struct sockaddr *)ss, &len) < 0) {
                int e = errno;
                snprintf(err, errlen, "%s: %s", where, strerror(e));
                close(fd);
                return -e;
        }
        return fd;
}

/* The port of a listener's address. */
static unsigned port_of(const struct sockaddr_storage *ss)
{
        return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                              : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

int serve_vm_option(const char *cmd, int opt, const char *arg)
{
        char *end;
        errno = 0;
        unsigned long v = strtoul(arg, &end, 10);
        if (arg[0] < '0' || arg[0] > '9' || errno)
                end = (char *)"x"; /* no sign, no overflow: refused below */
        if (opt == 'm' && (*end || !arg[0] || v < 128 || v > (1u << 20))) {
                fprintf(stderr, "cellvm %s: --memory takes MB, at least 128\n", cmd);
                return -EINVAL;
        }
        if (opt == 'n' && (*end || !arg[0] || v < 1 || v > 256)) {
                fprintf(stderr, "cellvm %s: --vcpus takes 1 to 256\n", cmd);
                return -EINVAL;
        }
        if (opt == 'm')
                serve.memory_mb = (unsigned)v;
        else
                serve.vcpus = (unsigned)v;
        return 0;
}

void serve_block_signals(sigset_t *set)
{
        sigemptyset(set);
        sigaddset(set, SIGTERM);
        sigaddset(set, SIGINT);
        sigaddset(set, SIGHUP);
        pthread_sigmask(SIG_BLOCK, set, NULL);
        signal(SIGPIPE, SIG_IGN);
}

/* --backend agent-sandbox: no VMs here, only the cluster's credentials and the listener. */
static int serve_kube_main(const struct sockaddr *addr, int listen_fd, const char *where,
                           unsigned client_timeout_s)
{
        char err[1024];
        if (serve_single_enabled()) {
                fputs("cellvm serve: --single and --backend exclude each other\n", stderr);
                return 2;
        }
        if (serve_kube_start(err, sizeof(err)) < 0) {
                fprintf(stderr, "cellvm serve: the cluster's credentials: %s\n", err);
                return 1;
        }
        sigset_t set;
        serve_block_signals(&set);
        struct MHD_Daemon *d =
            serve_http_start(addr, listen_fd, client_timeout_s, err, sizeof(err));
        if (!d) {
                fprintf(stderr, "cellvm serve: %s: %s\n", where, err);
                serve_kube_stop();
                return 1;
        }
        serve.ready = true;
        fprintf(stderr, "cellvm serve: listening on %s, backend agent-sandbox: ready\n", where);
        int sig = 0;
        sigwait(&set, &sig);
        fprintf(stderr, "cellvm serve: %s: stopping (the sandboxes live on in the cluster)\n",
                strsignal(sig));
        serve.stopping = 1;
        MHD_stop_daemon(d);
        serve_kube_stop();
        return 0;
}

int cmd_serve(int argc, char **argv)
{
        static const struct option opts[] = {
            {"listen", required_argument, NULL, 'l'},
            {"unix", required_argument, NULL, 'u'},
            {"image", required_argument, NULL, 'i'},
            {"memory", required_argument, NULL, 'm'},
            {"vcpus", required_argument, NULL, 'n'},
            {"pool", required_argument, NULL, 'p'},
            {"help", no_argument, NULL, 'h'},
            {"single", no_argument, NULL, 's'},
            {"domain", required_argument, NULL, 'd'},
            {"backend", required_argument, NULL, 'b'},
            {"namespace", required_argument, NULL, 'N'},
            {"warm-pool", required_argument, NULL, 'w'},
            {"router", required_argument, NULL, 'r'},
            {"pod-port", required_argument, NULL, 'P'},
            {"client-timeout", required_argument, NULL, 'T'},
            {NULL, 0, NULL, 0},
        };
        const char *listen_at = "127.0.0.1:3000", *unix_path = NULL, *domain = NULL;
        const char *image = getenv("CELLVM_IMAGE");
        serve.image = image && image[0] ? image : "build/image";
        serve.memory_mb = 1024;
        serve.vcpus = 1;
        unsigned pool_n = 0, client_timeout_s = 60;
        bool kube_opts = false;
        int opt;
        char *end;
        unsigned long n;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (opt) {
                case 'l':
                        listen_at = optarg;
                        break;
                case 'u':
                        unix_path = optarg;
                        break;
                case 'i':
                        serve.image = optarg;
                        break;
                case 'm':
                case 'n':
                        if (serve_vm_option("serve", opt, optarg) < 0)
                                return 2;
                        break;
                case 'd':
                        domain = optarg;
                        if (!optarg[0] || strlen(optarg) >= sizeof(serve.domain) ||
                            strspn(optarg, "abcdefghijklmnopqrstuvwxyz0123456789.-:") !=
                                strlen(optarg)) {
                                fputs("cellvm serve: --domain takes a lowercase host name "
                                      "(and :port)\n",
                                      stderr);
                                return 2;
                        }
                        break;
                case 'p':
                        errno = 0;
                        n = strtoul(optarg, &end, 10);
                        if (*end || optarg[0] < '0' || optarg[0] > '9' || errno || n > 64) {
                                fputs("cellvm serve: --pool takes 0 to 64\n", stderr);
                                return 2;
                        }
                        pool_n = (unsigned)n;
                        break;
                case 's':
                        serve_single_enable();
                        break;
                case 'T':
                        errno = 0;
                        n = strtoul(optarg, &end, 10);
                        if (*end || optarg[0] < '0' || optarg[0] > '9' || errno || n < 1 ||
                            n > 3600) {
                                fputs("cellvm serve: --client-timeout takes 1 to 3600 seconds\n",
                                      stderr);
                                return 2;
                        }
                        client_timeout_s = (unsigned)n;
                        break;
                case 'b':
                case 'N':
                case 'w':
                case 'r':
                case 'P':
                        if (serve_kube_option(opt, optarg) < 0)
                                return 2;
                        kube_opts |= opt != 'b';
                        break;
                case 'h':
                        fputs(serve_usage, stdout);
                        return 0;
                default:
                        fputs(serve_usage, stderr);
                        return 2;
                }
        }
        if (optind != argc) {
                fprintf(stderr, "cellvm serve: unexpected argument %s\n%s", argv[optind],
                        serve_usage);
                return 2;
        }
        bool kube = serve_kube_enabled();
        if (kube_opts && !kube) {
                fputs("cellvm serve: --namespace, --warm-pool, --router and --pod-port are "
                      "--backend agent-sandbox's\n",
                      stderr);
                return 2;
        }
        if (kube && serve_single_enabled()) {
                fputs("cellvm serve: --single and --backend exclude each other\n", stderr);
                return 2;
        }
        char err[1024];
        struct stat ist;
        char launch[4096];
        snprintf(launch, sizeof(launch), "%s/launch.txt", serve.image);
        if (!kube &&
            (stat(serve.image, &ist) < 0 || !S_ISDIR(ist.st_mode) || access(launch, R_OK) < 0)) {
                fprintf(stderr,
                        "cellvm serve: --image %s: %s (build the image with `make image`)\n",
                        serve.image,
                        stat(serve.image, &ist) < 0 ? strerror(errno)
                        : !S_ISDIR(ist.st_mode)     ? "not a directory"
                                                    : "no launch.txt in it");
                return 2;
        }
        struct sockaddr_storage ss;
        int listen_fd = -1;
        if (unix_path ? (listen_fd = listen_unix(unix_path, err, sizeof(err))) < 0
                      : parse_listen(listen_at, &ss, err, sizeof(err)) < 0) {
                fprintf(stderr, "cellvm serve: %s\n", err);
                return 2;
        }
        if (!unix_path && (listen_fd = listen_tcp(&ss, listen_at, err, sizeof(err))) < 0) {
                fprintf(stderr, "cellvm serve: %s\n", err);
                return 1;
        }
        /* Where it listens, with the port bound (--listen HOST:0 takes a free one). */
        char where[200];
        if (unix_path) {
                snprintf(where, sizeof(where), "%s", unix_path);
        } else {
                char host[INET6_ADDRSTRLEN] = "?";
                bool v6 = ss.ss_family == AF_INET6;
                inet_ntop(ss.ss_family,
                          v6 ? (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                             : (void *)&((struct sockaddr_in *)&ss)->sin_addr,
                          host, sizeof(host));
                snprintf(where, sizeof(where), v6 ? "[%s]:%u" : "%s:%u", host, port_of(&ss));
        }
        /* Egress never dials this server itself (serve_egress.c). */
        if (!unix_path)
                serve.listen_port = port_of(&ss);
        if (domain)
                snprintf(serve.domain, sizeof(serve.domain), "%s", domain);
        else if (unix_path)
                snprintf(serve.domain, sizeof(serve.domain), "localhost");
        else
                snprintf(serve.domain, sizeof(serve.domain), "localhost:%u", port_of(&ss));
        if (serve_load_key(serve.api_key, sizeof(serve.api_key), err, sizeof(err)) < 0) {
                fprintf(stderr, "cellvm serve: the API key: %s\n", err);
                close(listen_fd);
                return 1;
        }
        if (kube)
                return serve_kube_main(unix_path ? NULL : (struct sockaddr *)&ss, listen_fd, where,
                                       client_timeout_s);
        /* Signals are taken by sigwait below, in no other thread. */
        sigset_t set;
        serve_block_signals(&set);
        sbx_sweep();
        cvm_outlive_creator(true);
        struct MHD_Daemon *d = serve_http_start(unix_path ? NULL : (struct sockaddr *)&ss,
                                                listen_fd, client_timeout_s, err, sizeof(err));
        if (!d) {
                fprintf(stderr, "cellvm serve: %s: %s\n", where, err);
                close(listen_fd);
                return 1;
        }
        fprintf(stderr, "cellvm serve: listening on %s%s (image %s)\n",
                unix_path ? "unix:" : "http://", where, serve.image);
        /* The template every create restores: built now if need be (/health
         * says 503 meanwhile). */
        struct cvm_opts o = {
            .image = serve.image, .memory_mb = serve.memory_mb, .vcpus = serve.vcpus};
        struct cvm builder;
        if (snap_cmd_create(&o, cvm_user_memory_mb(o.memory_mb), false, "", &builder) != 0) {
                fputs("cellvm serve: no template: cannot serve sandboxes\n", stderr);
                MHD_stop_daemon(d);
                return 1;
        }
        pthread_t reaper;
        if (pthread_create(&reaper, NULL, serve_reaper, NULL) != 0) {
                fputs("cellvm serve: cannot start the reaper thread\n", stderr);
                MHD_stop_daemon(d);
                return 1;
        }
        pthread_t sampler;
        if (pthread_create(&sampler, NULL, serve_metrics_sampler, NULL) != 0) {
                fputs("cellvm serve: cannot start the metrics thread\n", stderr);
                MHD_stop_daemon(d);
                return 1;
        }
        if (serve_single_enabled())
                pool_n = 1; /* the pod's sandbox, restored and warmed now */
        if (serve_pool_start(pool_n) < 0) {
                fputs("cellvm serve: cannot start the pool's thread\n", stderr);
                MHD_stop_daemon(d);
                return 1;
        }
        int sig = 0;
        pthread_t single_watch;
        bool watching = false;
        if (serve_single_enabled() && serve_single_wait_warm(&set, &sig) == 0) {
                if (pthread_create(&single_watch, NULL, serve_single_watch, NULL) != 0) {
                        fputs("cellvm serve: cannot start the --single thread\n", stderr);
                        sig = SIGTERM;
                }
                watching = sig == 0;
        }
        serve.ready = sig == 0;
        if (!sig) {
                fprintf(stderr, "cellvm serve: ready%s\n",
                        serve_single_enabled() ? " (one sandbox, warm)"
                        : pool_n               ? " (the pool fills in the background)"
                                               : "");
                sigwait(&set, &sig);
        }
        fprintf(stderr, "cellvm serve: %s: killing the sandboxes\n", strsignal(sig));
        serve.stopping = 1;
        serve.ready = false;
        serve_pool_stop();
        serve_kill_all();
        if (watching)
                pthread_join(single_watch, NULL);
        pthread_join(reaper, NULL);
        pthread_join(sampler, NULL);
        MHD_stop_daemon(d);
        if (unix_path)
                (void)unlink(unix_path);
        return 0;
}
