/* The paused store, read and pruned by the CLI (see paused.h). */
#include "paused.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest.h"
#include "template.h"
#include "user_dirs.h"

/* registry.c's creg_new_key looks there too, by the same words. */
int cpaused_root(char *out, size_t outlen)
{
        return cvm_user_dir(CPAUSED_ROOT_ENV, "XDG_STATE_HOME", ".local/state", "cellvm/paused",
                            out, outlen);
}

static int by_name(const void *a, const void *b)
{
        return strcmp(((const struct cpaused *)a)->key, ((const struct cpaused *)b)->key);
}

/* Calls `each` with the record in `dir` (named `name`) if it is a paused
 * sandbox's: 1 visited, 0 (not one, or unreadable: reported), `each`'s
 * nonzero return as 2 (stop) or negative, or -ENOMEM. */
static int visit_record(const char *dir, const char *name, cpaused_fn each, void *ud, FILE *warn)
{
        struct csm m;
        if (csm_init(&m) < 0)
                return -ENOMEM;
        char err[PATH_MAX + 200];
        int rc = csm_read(dir, &m, err, sizeof(err));
        if (rc == -ENOMEM) {
                csm_free(&m);
                return rc;
        }
        if (rc < 0) {
                fprintf(warn,
                        "cellvm: paused sandbox %s is unreadable: %s (cellvm kill of its key, or "
                        "removing the directory, drops it)\n",
                        dir, err);
                csm_free(&m);
                return 0;
        }
        rc = 0;
        if (strcmp(m.kind, "paused") == 0) {
                struct cpaused p;
                snprintf(p.dir, sizeof(p.dir), "%s", dir);
                snprintf(p.key, sizeof(p.key), "%s", name);
                snprintf(p.sandbox_id, sizeof(p.sandbox_id), "%s", m.sandbox_id);
                snprintf(p.vmm, sizeof(p.vmm), "%s", m.vmm);
                p.memory_mb = m.memory_mb;
                p.started_ms = m.started_ms;
                rc = each(&p, &m, ud);
                rc = rc < 0 ? rc : rc > 0 ? 2 : 1;
        }
        csm_free(&m);
        return rc;
}

int cpaused_each(const char *root, cpaused_fn each, void *ud, FILE *warn)
{
        DIR *d = opendir(root);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int n = 0, rc = 0;
        struct dirent *e;
        errno = 0;
        while ((e = readdir(d)) != NULL) {
                size_t len = strlen(e->d_name);
                if (e->d_name[0] == '.' || (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0) ||
                    len >= sizeof(((struct cpaused *)0)->key))
                        continue;
                char dir[PATH_MAX];
                int w = snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name);
                struct stat st;
                if (w < 0 || (size_t)w >= sizeof(dir) || lstat(dir, &st) < 0 ||
                    !S_ISDIR(st.st_mode))
                        continue; /* the lock file, a link: not a record */
                int r = visit_record(dir, e->d_name, each, ud, warn);
                if (r < 0) {
                        rc = r;
                        break;
                }
                n += r > 0;
                if (r == 2)
                        break;
                errno = 0;
        }
        if (rc == 0 && e == NULL && errno)
                rc = -errno;
        if (closedir(d) < 0 && rc == 0)
                rc = -errno;
        return rc < 0 ? rc : n;
}

struct collected {
        struct cpaused *out;
        int n, max;
};

static int collect(const struct cpaused *p, const struct csm *m, void *ud)
{
        (void)m;
        struct collected *c = ud;
        c->out[c->n++] = *p;
        return c->n == c->max;
}

int cpaused_list(const char *root, struct cpaused *out, int max, FILE *warn)
{
        if (max <= 0)
                return 0;
        struct collected c = {.out = out, .max = max};
        int rc = cpaused_each(root, collect, &c, warn);
        if (rc < 0)
                return rc;
        qsort(out, (size_t)c.n, sizeof(*out), by_name);
        return c.n;
}

int cpaused_lock(const char *root)
{
        char lock[PATH_MAX];
        int w = snprintf(lock, sizeof(lock), "%s/lock", root);
        if (w < 0 || (size_t)w >= sizeof(lock))
                return -ENAMETOOLONG;
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        int rc;
        while ((rc = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
                ;
        if (rc < 0) {
                rc = -errno;
                close(fd);
                return rc;
        }
        return fd;
}

int cpaused_remove(const char *root, const struct cpaused *p)
{
        int fd = cpaused_lock(root);
        if (fd < 0)
                return fd;
        int rc;
        struct stat st;
        if (lstat(p->dir, &st) < 0)
                rc = errno == ENOENT ? 0 : -errno;
        else if ((rc = ctpl_rmtree(p->dir)) == 0)
                rc = 1;
        if (close(fd) < 0 && rc >= 0)
                rc = -errno;
        return rc;
}
