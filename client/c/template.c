/* The user's templates on disk: see template.h and docs/SNAPSHOTS.md. */
#include "template.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tsc_word.h"
#include "user_dirs.h"

uint64_t ctpl_fnv1a64(uint64_t h, const void *data, size_t len)
{
        const unsigned char *p = data;
        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= 0x100000001b3ull;
        }
        return h;
}

/* One more string of the NUL-joined sequence. */
static uint64_t hash_part(uint64_t h, const char *s, bool *first)
{
        if (!*first)
                h = ctpl_fnv1a64(h, "", 1);
        *first = false;
        return ctpl_fnv1a64(h, s, strlen(s));
}

/* hash_part of `s` made TSC frequency neutral (tsc_word.h); false: out of memory. */
static bool hash_neutral(uint64_t *h, const char *s, bool *first)
{
        char *n = ctsc_neutral(s);
        if (!n)
                return false;
        *h = hash_part(*h, n, first);
        free(n);
        return true;
}

int ctpl_name(const struct csm *want, char *out, size_t outlen)
{
        uint64_t h = CTPL_FNV_BASIS;
        bool first = true;
        bool ok = true;
        for (size_t i = 0; i < want->arg.n; i++)
                ok = ok && hash_neutral(&h, want->arg.v[i], &first);
        for (size_t i = 0; i < want->request.n; i++)
                ok = ok && hash_neutral(&h, want->request.v[i], &first);
        ok = ok && hash_neutral(&h, want->cmdline, &first);
        if (!ok)
                return -ENOMEM;
        char num[24];
        snprintf(num, sizeof(num), "%" PRIu64, want->memory_mb);
        h = hash_part(h, num, &first);
        snprintf(num, sizeof(num), "%" PRIu64, want->vcpus);
        h = hash_part(h, num, &first);
        for (size_t i = 0; i < want->file.n; i++) {
                /* "<role> <size> <mtime_ns> <path>": the path is the rest after three spaces. */
                const char *p = want->file.v[i];
                for (int k = 0; k < 3 && p; k++) {
                        p = strchr(p, ' ');
                        p = p ? p + 1 : NULL;
                }
                if (!hash_neutral(&h, p ? p : "", &first))
                        return -ENOMEM;
        }
        int n = snprintf(out, outlen, "%s-%016" PRIx64, want->vmm, h);
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int ctpl_root(char *out, size_t outlen)
{
        return cvm_user_dir(CTPL_ROOT_ENV, "XDG_CACHE_HOME", ".cache", "cellvm/templates", out,
                            outlen);
}

/* mkdir -p of the parents (default mode, as os.makedirs), then the leaf 0700. */
static int make_dirs(char *path, mode_t leaf_mode)
{
        for (char *p = path + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                int rc = mkdir(path, 0777) < 0 && errno != EEXIST ? -errno : 0;
                *p = '/';
                if (rc < 0)
                        return rc;
        }
        return mkdir(path, leaf_mode) < 0 && errno != EEXIST ? -errno : 0;
}

int ctpl_private_dir(const char *path, char *err, size_t errlen)
{
        char buf[PATH_MAX];
        if (strlen(path) >= sizeof(buf)) {
                snprintf(err, errlen, "%s: path too long", path);
                return -ENAMETOOLONG;
        }
        strcpy(buf, path);
        size_t n = strlen(buf);
        while (n > 1 && buf[n - 1] == '/')
                buf[--n] = '\0';
        int rc = make_dirs(buf, 0700);
        struct stat st;
        if (rc == 0 && lstat(path, &st) < 0)
                rc = -errno;
        if (rc < 0) {
                snprintf(err, errlen, "%s: %s", path, strerror(-rc));
                return rc;
        }
        if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
                snprintf(err, errlen,
                         "%s is not a directory of this user writable only by it (uid %u, mode "
                         "0o%o)",
                         path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
                return -EPERM;
        }
        return 0;
}

int ctpl_current(const char *tdir, char *out, size_t outlen, char *err, size_t errlen)
{
        char link[PATH_MAX], target[256];
        snprintf(link, sizeof(link), "%s/%s", tdir, CTPL_CURRENT);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n < 0 && (errno == ENOENT || errno == ENOTDIR))
                return 0;
        if (n < 0) {
                int e = errno;
                snprintf(err, errlen, "%s: %s", link, strerror(e));
                return -e;
        }
        target[n] = '\0';
        if ((size_t)n == sizeof(target) - 1 || strchr(target, '/') || strncmp(target, "t-", 2)) {
                snprintf(err, errlen, "%s points to '%.80s', not a snapshot of this directory",
                         link, target);
                return -EINVAL;
        }
        int k = snprintf(out, outlen, "%s/%s", tdir, target);
        if (k < 0 || (size_t)k >= outlen) {
                snprintf(err, errlen, "%s: path too long", link);
                return -ENAMETOOLONG;
        }
        /* A snapshot removed because it did not restore leaves the link: none. */
        struct stat st;
        if (lstat(out, &st) < 0 && errno == ENOENT)
                return 0;
        return 1;
}

int ctpl_lock_build(const char *root, const char *tdir, int *fd, char *err, size_t errlen)
{
        int rc = ctpl_private_dir(root, err, errlen);
        if (rc == 0)
                rc = ctpl_private_dir(tdir, err, errlen);
        if (rc < 0)
                return rc;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", tdir, CTPL_LOCK);
        int lfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (lfd < 0) {
                rc = -errno;
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                return rc;
        }
        if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK) {
                        rc = -errno;
                        snprintf(err, errlen, "flock %s: %s", path, strerror(errno));
                        close(lfd);
                        return rc;
                }
                fprintf(stderr,
                        "cellvm: template %s is being built by another process: waiting for it\n",
                        tdir);
                while (flock(lfd, LOCK_EX) < 0) {
                        if (errno != EINTR) {
                                rc = -errno;
                                snprintf(err, errlen, "flock %s: %s", path, strerror(errno));
                                close(lfd);
                                return rc;
                        }
                }
        }
        *fd = lfd;
        return 0;
}

static int random_hex(char *out, size_t nbytes)
{
        unsigned char b[16];
        if (nbytes > sizeof(b))
                return -EINVAL;
        if (getrandom(b, nbytes, 0) != (ssize_t)nbytes)
                return -EIO;
        for (size_t i = 0; i < nbytes; i++)
                snprintf(out + 2 * i, 3, "%02x", b[i]);
        return 0;
}

int ctpl_new_snapshot_dir(const char *tdir, char *out, size_t outlen, char *err, size_t errlen)
{
        char hex[13];
        int rc = random_hex(hex, 6);
        if (rc < 0) {
                snprintf(err, errlen, "getrandom: %s", strerror(-rc));
                return rc;
        }
        int n = snprintf(out, outlen, "%s/t-%s.tmp", tdir, hex);
        if (n < 0 || (size_t)n >= outlen) {
                snprintf(err, errlen, "%s: path too long", tdir);
                return -ENAMETOOLONG;
        }
        if (mkdir(out, 0700) < 0) {
                rc = -errno;
                snprintf(err, errlen, "mkdir %s: %s", out, strerror(errno));
                return rc;
        }
        return 0;
}

int ctpl_publish(const char *tdir, const char *tmpdir, char *final, size_t finallen, char *err,
                 size_t errlen)
{
        size_t n = strlen(tmpdir);
        if (n < 5 || strcmp(tmpdir + n - 4, ".tmp") != 0 || n - 4 >= finallen) {
                snprintf(err, errlen, "%s: not a t-ID.tmp directory", tmpdir);
                return -EINVAL;
        }
        memcpy(final, tmpdir, n - 4);
        final[n - 4] = '\0';
        if (rename(tmpdir, final) < 0) {
                int e = errno;
                snprintf(err, errlen, "rename %s: %s", tmpdir, strerror(e));
                return -e;
        }
        char hex[7], link[PATH_MAX], cur[PATH_MAX];
        int rc = random_hex(hex, 3);
        if (rc < 0) {
                snprintf(err, errlen, "getrandom: %s", strerror(-rc));
                return rc;
        }
        snprintf(link, sizeof(link), "%s/%s.tmp-%d-%s", tdir, CTPL_CURRENT, (int)getpid(), hex);
        snprintf(cur, sizeof(cur), "%s/%s", tdir, CTPL_CURRENT);
        const char *base = strrchr(final, '/') ? strrchr(final, '/') + 1 : final;
        if (symlink(base, link) < 0) {
                rc = -errno;
                snprintf(err, errlen, "symlink %s: %s", link, strerror(errno));
                return rc;
        }
        if (rename(link, cur) < 0) {
                rc = -errno;
                snprintf(err, errlen, "rename %s over %s: %s", link, cur, strerror(errno));
                (void)unlink(link); /* the rename's error is the one reported */
                return rc;
        }
        (void)ctpl_prune(tdir, final);
        return 0;
}

static const char *basename_of(const char *p)
{
        const char *s = strrchr(p, '/');
        return s ? s + 1 : p;
}

int ctpl_prune(const char *tdir, const char *keep)
{
        char cur[PATH_MAX], err[256];
        int have = ctpl_current(tdir, cur, sizeof(cur), err, sizeof(err));
        DIR *d = opendir(tdir);
        if (!d)
                return -errno;
        int removed = 0;
        time_t now = time(NULL);
        struct dirent *de;
        while ((de = readdir(d))) {
                const char *name = de->d_name;
                if (strncmp(name, "t-", 2) != 0 || (keep && strcmp(name, basename_of(keep)) == 0) ||
                    (have == 1 && strcmp(name, basename_of(cur)) == 0))
                        continue;
                char p[PATH_MAX];
                if ((size_t)snprintf(p, sizeof(p), "%s/%s", tdir, name) >= sizeof(p))
                        continue;
                size_t n = strlen(name);
                struct stat st;
                if (n > 4 && strcmp(name + n - 4, ".tmp") == 0 &&
                    (lstat(p, &st) < 0 || now - st.st_mtime < CTPL_STALE_TMP_S))
                        continue; /* maybe another builder's (it would hold the lock we hold) */
                if (ctpl_remove_unused(p) == 1)
                        removed++;
        }
        closedir(d);
        return removed;
}

int ctpl_use(const char *snapdir, int *fd, char *err, size_t errlen)
{
        int dfd = open(snapdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                int e = errno;
                snprintf(err, errlen, "%s: %s", snapdir, strerror(e));
                return -e;
        }
        while (flock(dfd, LOCK_SH) < 0) {
                if (errno != EINTR) {
                        int e = errno;
                        snprintf(err, errlen, "flock %s: %s", snapdir, strerror(e));
                        close(dfd);
                        return -e;
                }
        }
        *fd = dfd;
        return 0;
}

int ctpl_remove_unused(const char *snapdir)
{
        int fd = open(snapdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int rc = errno == EWOULDBLOCK ? 0 : -errno;
                close(fd);
                return rc;
        }
        int rc = ctpl_rmtree(snapdir);
        close(fd);
        return rc < 0 ? rc : 1;
}

/* nftw's callback takes no argument: per thread, as cellvm serve removes
 * records from several threads at once. */
static _Thread_local int rmtree_first_error;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)ftw;
        int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
        if (rc < 0 && errno != ENOENT && !rmtree_first_error)
                rmtree_first_error = -errno;
        return 0; /* go on: remove what can be removed */
}

int ctpl_rmtree(const char *path)
{
        rmtree_first_error = 0;
        if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
                return -errno;
        return rmtree_first_error;
}
