/*
 * The sandbox user's credentials. File operations switch the file-system
 * identity (setfsuid/setfsgid and the supplementary groups) around each
 * syscall, so the kernel checks permissions as that user would; the agent is
 * single-threaded, so nothing else runs under the borrowed identity. When the
 * agent is not root (dev mode) every operation is the agent's own.
 */

#include "creds.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"

/* Default sandbox user when a request names none. */
#define SANDBOX_USER "user"
/* Its uid and gid when a root agent runs where the user does not exist (a dev host). */
#define SANDBOX_FALLBACK_ID 1000

static void creds_self(struct agent *a, struct creds *out)
{
        out->uid = geteuid();
        out->gid = getegid();
        out->ngroups = 0;
        out->drop = false;
        struct passwd *pw = getpwuid(out->uid);
        snprintf(out->name, sizeof(out->name), "%s", pw ? pw->pw_name : "?");
        snprintf(out->home, sizeof(out->home), "%s", a->workdir);
}

int creds_lookup(struct agent *a, const char *name, struct creds *out)
{
        memset(out, 0, sizeof(*out));
        bool explicit = name != NULL;
        if (!name)
                name = SANDBOX_USER;
        struct passwd *pw = getpwnam(name);
        if (!pw && explicit && strcmp(name, SANDBOX_USER) != 0)
                return -ENOENT;
        if (geteuid() != 0) {
                /* Dev mode: an unprivileged agent cannot become anyone else. */
                creds_self(a, out);
                return 0;
        }
        if (!pw) {
                /* Same fallback as the executors (confine_agent.c): a root agent on a host
                 * without the user still keeps user code and its files off uid 0. */
                static bool said;
                if (!said)
                        log_info("sandbox user \"%s\" does not exist: file operations and "
                                 "commands run as uid/gid %d, as executors do",
                                 name, SANDBOX_FALLBACK_ID);
                said = true;
                snprintf(out->name, sizeof(out->name), "%s", name);
                out->uid = SANDBOX_FALLBACK_ID;
                out->gid = SANDBOX_FALLBACK_ID;
                out->ngroups = 0;
                out->drop = true;
                snprintf(out->home, sizeof(out->home), "%s", a->workdir);
                return 0;
        }
        snprintf(out->name, sizeof(out->name), "%s", pw->pw_name);
        out->uid = pw->pw_uid;
        out->gid = pw->pw_gid;
        out->ngroups = (int)(sizeof(out->groups) / sizeof(out->groups[0]));
        if (getgrouplist(pw->pw_name, pw->pw_gid, out->groups, &out->ngroups) < 0)
                out->ngroups = (int)(sizeof(out->groups) / sizeof(out->groups[0]));
        out->drop = pw->pw_uid != 0;
        struct stat st;
        if (pw->pw_dir && stat(pw->pw_dir, &st) == 0 && S_ISDIR(st.st_mode))
                snprintf(out->home, sizeof(out->home), "%s", pw->pw_dir);
        else
                snprintf(out->home, sizeof(out->home), "%s", a->workdir);
        return 0;
}

int creds_enter(const struct creds *cr, struct creds_saved *saved)
{
        saved->active = false;
        if (!cr->drop)
                return 0;
        saved->ngroups =
            getgroups((int)(sizeof(saved->groups) / sizeof(saved->groups[0])), saved->groups);
        if (saved->ngroups < 0)
                return -errno;
        if (setgroups((size_t)cr->ngroups, cr->groups) < 0)
                return -errno;
        saved->fsgid = (gid_t)setfsgid(cr->gid);
        saved->fsuid = (uid_t)setfsuid(cr->uid);
        saved->active = true;
        /* setfsuid reports the previous value whatever happens; check it took. */
        if ((uid_t)setfsuid((uid_t)-1) != cr->uid || (gid_t)setfsgid((gid_t)-1) != cr->gid) {
                creds_leave(saved);
                return -EPERM;
        }
        return 0;
}

void creds_leave(struct creds_saved *saved)
{
        if (!saved->active)
                return;
        setfsuid(saved->fsuid);
        setfsgid(saved->fsgid);
        if (setgroups((size_t)saved->ngroups, saved->groups) < 0)
                log_error("restoring supplementary groups: %s", strerror(errno));
        saved->active = false;
}

/* Lexical clean like Go's filepath.Clean: no "//", ".", trailing "/"; ".." drops a component. */
static void clean_path(char *p)
{
        char *out = p + 1; /* p[0] is '/' */
        const char *in = p + 1;
        while (*in) {
                const char *end = strchrnul(in, '/');
                size_t n = (size_t)(end - in);
                if (n == 0 || (n == 1 && in[0] == '.')) {
                        /* skip */
                } else if (n == 2 && in[0] == '.' && in[1] == '.') {
                        while (out > p + 1 && *--out != '/')
                                ;
                } else {
                        if (out > p + 1)
                                *out++ = '/';
                        memmove(out, in, n);
                        out += n;
                }
                in = *end ? end + 1 : end;
        }
        *out = '\0';
}

int creds_resolve_path(const struct creds *cr, const char *path, char *out, size_t size)
{
        /* As envd (envd/internal/permissions/path.go expand): "~", "~/x" and "~\\x" are
         * the request user's home joined with the rest; "~name" is refused; a "~" anywhere
         * else is an ordinary character. */
        bool tilde = path[0] == '~';
        if (tilde && path[1] != '\0' && path[1] != '/' && path[1] != '\\')
                return -EINVAL;
        int n = !tilde && path[0] == '/'
                    ? snprintf(out, size, "%s", path)
                    : snprintf(out, size, "%s/%s", cr->home, tilde ? path + 1 : path);
        if (n < 0 || (size_t)n >= size)
                return -ENAMETOOLONG;
        clean_path(out);
        return 0;
}
