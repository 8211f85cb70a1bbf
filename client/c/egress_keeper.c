/* The launcher's egress keeper (egress_keeper.h). */
#include "egress_keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_help.h"
#include "keeper.h"
#include "serve.h"
#include "serve_egress.h"
#include "vmm.h"

#define CONNECT_TIMEOUT_MS 60000 /* the agent (re)opens its port within 0.1 s of a connect */

/* The keys of a rules object: E2B's network object and its update body. */
static const char *const rule_keys[] = {"allowOut",           "allow_out", "denyOut",
                                        "deny_out",           "rules",     "allow_internet_access",
                                        "allowInternetAccess"};

static const char *unknown_key(json_t *o, bool wrapped)
{
        const char *key;
        json_t *v;
        json_object_foreach(o, key, v)
        {
                bool known = false;
                for (size_t i = 0; i < sizeof(rule_keys) / sizeof(rule_keys[0]) && !known; i++)
                        known = strcmp(key, rule_keys[i]) == 0 && (!wrapped || i >= 5);
                if (wrapped && strcmp(key, "network") == 0)
                        known = true;
                if (!known)
                        return key;
        }
        return NULL;
}

int cegress_rules_parse(const char *text, json_t **rules, char *why, size_t whylen)
{
        *rules = NULL;
        json_error_t jerr;
        json_t *top = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        if (!top || !json_is_object(top)) {
                snprintf(why, whylen,
                         "the rules must be a JSON object (E2B's network: "
                         "{\"allowOut\": [...], \"denyOut\": [...]}): %s",
                         top ? "not an object" : jerr.text);
                json_decref(top);
                return -EINVAL;
        }
        /* {"network": {...}, "allow_internet_access": B} as cellvm egress prints
         * them, or the bare network object (with allow_internet_access in it). */
        json_t *network = json_object_get(top, "network");
        bool wrapped = network != NULL;
        const char *bad = unknown_key(top, wrapped);
        if (!bad && wrapped && json_is_object(network))
                bad = unknown_key(network, false);
        if (bad || (wrapped && !json_is_object(network) && !json_is_null(network))) {
                snprintf(why, whylen,
                         bad ? "unknown key \"%s\" (the rules take allowOut, denyOut, "
                               "allow_internet_access, or {\"network\": {...}} as cellvm egress "
                               "prints them)"
                             : "%snetwork must be an object",
                         bad ? bad : "");
                json_decref(top);
                return -EINVAL;
        }
        json_t *body = wrapped ? (json_is_object(network) ? json_deep_copy(network) : json_object())
                               : json_deep_copy(top);
        json_t *aia = NULL;
        const char *aia_keys[] = {"allow_internet_access", "allowInternetAccess"};
        for (size_t i = 0; i < 2; i++) {
                json_t *x = json_object_get(top, aia_keys[i]);
                if (!x && body)
                        x = json_object_get(body, aia_keys[i]);
                if (x && !aia)
                        aia = json_incref(x);
                if (body)
                        (void)json_object_del(body, aia_keys[i]);
        }
        json_decref(top);
        struct egress_policy p;
        int rc = body ? serve_egress_policy_of(body, aia, &p, why, whylen) : -ENOMEM;
        if (body)
                egress_policy_free(&p);
        if (rc < 0) {
                if (rc == -ENOMEM)
                        snprintf(why, whylen, "out of memory");
                json_decref(body);
                json_decref(aia);
                return rc;
        }
        /* Kept as {network, allow_internet_access}; {} when there are none. */
        json_t *r = json_object();
        if (r && json_object_size(body) && json_object_set(r, "network", body) < 0) {
                json_decref(r);
                r = NULL;
        }
        if (r && aia && json_object_set(r, "allow_internet_access", aia) < 0) {
                json_decref(r);
                r = NULL;
        }
        json_decref(body);
        json_decref(aia);
        if (!r) {
                snprintf(why, whylen, "out of memory");
                return -ENOMEM;
        }
        *rules = r;
        return 0;
}

int cegress_rules_write(const char *vmdir, json_t *rules, char *why, size_t whylen)
{
        char path[PATH_MAX], tmp[PATH_MAX + 16];
        if (snprintf(path, sizeof(path), "%s/" CVM_EGRESS_RULES, vmdir) >= (int)sizeof(path)) {
                snprintf(why, whylen, "%s: path too long", vmdir);
                return -ENAMETOOLONG;
        }
        /* One temp file per writer: two updates at once each rename a whole file. */
        snprintf(tmp, sizeof(tmp), "%s/" CVM_EGRESS_RULES_TMP ".%d", vmdir, (int)getpid());
        char *text = json_dumps(rules, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text) {
                snprintf(why, whylen, "out of memory");
                return -ENOMEM;
        }
        int rc = 0;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        size_t len = strlen(text), off = 0;
        if (fd < 0)
                rc = -errno;
        while (rc == 0 && off < len) {
                ssize_t n = write(fd, text + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        rc = -errno;
                else
                        off += (size_t)n;
        }
        if (fd >= 0 && close(fd) < 0 && rc == 0)
                rc = -errno;
        if (rc == 0 && rename(tmp, path) < 0)
                rc = -errno;
        if (rc < 0) {
                snprintf(why, whylen, "%s: %s", fd < 0 ? tmp : path, strerror(-rc));
                (void)unlink(tmp);
        }
        free(text);
        return rc;
}

json_t *cegress_rules_load(const char *dir)
{
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/" CVM_EGRESS_RULES, dir) >= (int)sizeof(path))
                return NULL;
        json_t *r = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(r)) {
                json_decref(r);
                return NULL;
        }
        return r;
}

pid_t cegress_keeper_start(const char *key, const char *vmdir)
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n < 0)
                return -errno;
        exe[n] = '\0';
        char log[PATH_MAX];
        if (snprintf(log, sizeof(log), "%s/" CVM_EGRESS_LOG, vmdir) >= (int)sizeof(log))
                return -ENAMETOOLONG;
        pid_t child = fork();
        if (child != 0)
                return child < 0 ? -errno : child;
        ckeeper_detach(log);
        execl(exe, "cellvm", "egress-keep", key, vmdir, (char *)NULL);
        fprintf(stderr, "cellvm egress: exec %s: %s\n", exe, strerror(errno));
        _exit(127);
}

int cegress_keeper_lock_open(const char *vmdir)
{
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/" CVM_EGRESS_LOCK, vmdir) >= (int)sizeof(path))
                return -ENAMETOOLONG;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

int cegress_keeper_wait(int lock, int timeout_ms)
{
        int rc = -ETIMEDOUT;
        for (int waited = 0; waited <= timeout_ms; waited += 10) {
                if (flock(lock, LOCK_SH | LOCK_NB) == 0) {
                        rc = 0;
                        break;
                }
                if (errno != EWOULDBLOCK && errno != EINTR) {
                        rc = -errno;
                        break;
                }
                struct timespec ts = {.tv_nsec = 10 * 1000 * 1000};
                (void)nanosleep(&ts, NULL); /* an EINTR only shortens one step */
        }
        close(lock);
        return rc;
}

/* The one sandbox of this process: its id (for the log) and its connection
 * to the egress port; never freed (the table reference is never dropped). */
static struct sandbox box = {.refs = 1};

int cmd_egress_keep(int argc, char **argv)
{
        static const char keep_usage[] =
            "usage: cellvm egress-keep KEY VMDIR\n"
            "(plumbing) the egress keeper of sandbox KEY, whose VM directory is VMDIR, in the\n"
            "foreground: cellvm create --egress and cellvm egress start it.\n";
        if (argc == 2 && cli_is_help(argv[1])) {
                fputs(keep_usage, stdout);
                return 0;
        }
        if (argc != 3 || argv[1][0] == '-') {
                fprintf(stderr, "cellvm: egress-keep: %s\n%s",
                        argc != 3 ? "takes KEY and VMDIR" : "unknown option", keep_usage);
                return 2;
        }
        const char *key = argv[1], *dir = argv[2];
        serve_egress_who = "cellvm egress";
        signal(SIGPIPE, SIG_IGN);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/" CVM_EGRESS_LOCK, dir);
        int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock < 0) {
                fprintf(stderr, "cellvm egress: %s: %s\n", path, strerror(errno));
                return 3;
        }
        if (flock(lock, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? 0 : 3; /* another keeper has the port */
        snprintf(box.id, sizeof(box.id), "%s", key);
        char addr[PATH_MAX + 8];
        snprintf(addr, sizeof(addr), "unix:%s/" CVM_EGRESS_SOCKET, dir);
        struct cvc_connect_opts o = {.timeout_ms = CONNECT_TIMEOUT_MS,
                                     .hello_resend_ms = CVC_HELLO_RESEND_MS};
        struct cvc *c = NULL;
        int rc = cvc_connect_ex(addr, &o, &c);
        if (rc < 0) {
                fprintf(stderr, "cellvm egress: sandbox %s: %s: %s\n", key, addr,
                        c ? cvc_errmsg(c) : strerror(-rc));
                cvc_close(c);
                return 3;
        }
        if ((rc = mux_start(&box.mux, c)) < 0) {
                fprintf(stderr, "cellvm egress: sandbox %s: %s\n", key, strerror(-rc));
                cvc_close(c);
                return 3;
        }
        char why[512];
        snprintf(path, sizeof(path), "%s/" CVM_EGRESS_RULES, dir);
        if ((rc = serve_egress_follow(&box, path, why, sizeof(why))) < 0) {
                fprintf(stderr, "cellvm egress: sandbox %s: %s\n", key, why);
                mux_close(&box.mux);
                return 3;
        }
        /* Until the VM is gone (its end closes the port's socket). */
        pthread_mutex_lock(&box.mux.lock);
        while (!box.mux.broken)
                pthread_cond_wait(&box.mux.cond, &box.mux.lock);
        pthread_mutex_unlock(&box.mux.lock);
        return 0;
}
