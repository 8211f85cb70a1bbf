/* The launcher's egress keeper (egress_keeper.h). */
#include "egress_keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keeper.h"
#include "serve.h"
#include "serve_egress.h"
#include "vmm.h"

#define CONNECT_TIMEOUT_MS 60000 /* the agent (re)opens its port within 0.1 s of a connect */

int cegress_rules_parse(const char *text, json_t **rules, char *why, size_t whylen)
{
        *rules = NULL;
        json_error_t jerr;
        json_t *body = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        if (!body || !json_is_object(body)) {
                snprintf(why, whylen,
                         "the rules must be a JSON object (E2B's network: "
                         "{\"allowOut\": [...], \"denyOut\": [...]}): %s",
                         body ? "not an object" : jerr.text);
                json_decref(body);
                return -EINVAL;
        }
        json_t *aia = json_object_get(body, "allow_internet_access");
        if (!aia)
                aia = json_object_get(body, "allowInternetAccess");
        struct egress_policy p;
        int rc = serve_egress_policy_of(body, aia, &p, why, whylen);
        egress_policy_free(&p);
        if (rc < 0) {
                json_decref(body);
                return rc;
        }
        json_t *r = json_pack("{s:O}", "network", body);
        if (r && aia && json_object_set(r, "allow_internet_access", aia) < 0) {
                json_decref(r);
                r = NULL;
        }
        json_decref(body);
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

/* The one sandbox of this process: its id (for the log) and its connection
 * to the egress port; never freed (the table reference is never dropped). */
static struct sandbox box = {.refs = 1};

int cmd_egress_keep(int argc, char **argv)
{
        if (argc != 3) {
                fputs("cellvm: usage: egress-keep KEY VMDIR (plumbing: cellvm egress starts it)\n",
                      stderr);
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
