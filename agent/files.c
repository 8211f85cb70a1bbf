/* The files service's one-shot requests: stat, list, remove, rename, mkdir (section 9). */

#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "cbor_util.h"
#include "conn.h"
#include "creds.h"
#include "log.h"
#include "msgtypes.h"
#include "svc.h"
#include "writer.h"

/* Most entries one FILE_LIST returns: keeps the reply well under max_message. */
#define LIST_MAX_ENTRIES 100000u
#define LIST_MAX_DEPTH 64u

int files_request_path(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body,
                       const char *key, struct creds *cr, char *abs, size_t size)
{
        char *user = NULL;
        int rc = cv_map_dup_str(body, "user", &user);
        if (rc < 0 && rc != -ENOENT) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`user` must be text");
                return -1;
        }
        rc = creds_lookup(a, user, cr);
        if (rc < 0) {
                conn_send_error(a, c, id, CV_ERR_NOT_FOUND, "no user %.64s", user);
                free(user);
                return -1;
        }
        free(user);
        char *path = NULL;
        rc = cv_map_dup_str(body, key, &path);
        if (rc < 0 || path[0] == '\0') {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`%s` must be present, as non-empty text without NUL", key);
                free(path);
                return -1;
        }
        rc = creds_resolve_path(cr, path, abs, size);
        if (rc == -EINVAL)
                conn_send_error(a, c, id, "invalid_argument", CREDS_TILDE_ERROR, path, cr->name);
        else if (rc < 0)
                svc_send_errno(a, c, id, -rc, "path", path);
        free(path);
        return rc < 0 ? -1 : 0;
}

static char type_letter(mode_t m)
{
        switch (m & S_IFMT) {
        case S_IFDIR:
                return 'd';
        case S_IFLNK:
                return 'L';
        case S_IFIFO:
                return 'p';
        case S_IFSOCK:
                return 'S';
        case S_IFCHR:
                return 'c';
        case S_IFBLK:
                return 'D';
        default:
                return '-';
        }
}

/* Go's FileMode.String() (what E2B's envd reports): "-rw-r--r--", "drwxr-xr-x". */
static void permissions_text(mode_t m, char out[11])
{
        static const char rwx[] = "rwxrwxrwx";
        out[0] = type_letter(m);
        for (int i = 0; i < 9; i++)
                out[1 + i] = (m & (1u << (8 - i))) ? rwx[i] : '-';
        out[10] = '\0';
}

void files_encode_entry(struct cv_buf *b, const char *path, const struct stat *st)
{
        const char *slash = strrchr(path, '/');
        const char *name = slash && slash[1] ? slash + 1 : path;
        char target[PATH_MAX];
        ssize_t tlen = -1;
        const char *type = S_ISDIR(st->st_mode) ? "dir" : S_ISREG(st->st_mode) ? "file" : "other";
        /* As E2B's envd (shared/pkg/filesystem/entry.go GetEntryInfo): only
         * the permission bits; a symlink has its target's type and mode (a
         * dangling one: type "other", mode 0) and, as target, the path with
         * every link resolved (filepath.EvalSymlinks; the link's own path
         * when that fails). */
        unsigned mode = st->st_mode & 0777;
        if (S_ISLNK(st->st_mode)) {
                if (realpath(path, target)) {
                        tlen = (ssize_t)strlen(target);
                } else {
                        tlen = (ssize_t)strnlen(path, sizeof(target) - 1);
                        memcpy(target, path, (size_t)tlen);
                }
                struct stat tst;
                type = "other";
                mode = 0;
                if (stat(path, &tst) == 0) {
                        type = S_ISDIR(tst.st_mode)   ? "dir"
                               : S_ISREG(tst.st_mode) ? "file"
                                                      : "other";
                        mode = tst.st_mode & 0777;
                }
        }
        char perms[11];
        permissions_text(st->st_mode, perms);
        char owner[32], group[32];
        struct passwd *pw = getpwuid(st->st_uid);
        struct group *gr = getgrgid(st->st_gid);
        if (pw)
                snprintf(owner, sizeof(owner), "%s", pw->pw_name);
        else
                snprintf(owner, sizeof(owner), "%u", (unsigned)st->st_uid);
        if (gr)
                snprintf(group, sizeof(group), "%s", gr->gr_name);
        else
                snprintf(group, sizeof(group), "%u", (unsigned)st->st_gid);
        cv_enc_map(b, tlen >= 0 ? 10 : 9);
        cv_enc_cstr(b, "name");
        cv_enc_cstr(b, name);
        cv_enc_cstr(b, "type");
        cv_enc_cstr(b, type);
        cv_enc_cstr(b, "path");
        cv_enc_cstr(b, path);
        cv_enc_cstr(b, "size");
        cv_enc_uint(b, (uint64_t)st->st_size);
        cv_enc_cstr(b, "mode");
        cv_enc_uint(b, mode);
        cv_enc_cstr(b, "permissions");
        cv_enc_cstr(b, perms);
        cv_enc_cstr(b, "owner");
        cv_enc_cstr(b, owner);
        cv_enc_cstr(b, "group");
        cv_enc_cstr(b, group);
        cv_enc_cstr(b, "modified_time");
        cv_enc_uint(b,
                    (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec);
        if (tlen >= 0) {
                cv_enc_cstr(b, "symlink_target");
                cv_enc_text(b, target, (size_t)tlen);
        }
}

/* Ends a reply encoded since `mark`; answers `internal` if encoding failed. */
static void reply_end(struct agent *a, struct conn *c, size_t mark, uint32_t id)
{
        int rc = cv_out_end(&c->out, mark, CV_MSG_OK, id);
        if (rc < 0)
                conn_send_error(a, c, id, rc == -EMSGSIZE ? CV_ERR_TOO_LARGE : CV_ERR_INTERNAL,
                                "encoding the reply: %s", strerror(-rc));
        conn_touch(c);
}

/* Replies OK with the EntryInfo of `path`, or the lstat error. Call with the user's creds. */
static void reply_entry(struct agent *a, struct conn *c, uint32_t id, const char *path)
{
        struct stat st;
        if (lstat(path, &st) < 0) {
                svc_send_errno(a, c, id, errno, "stat", path);
                return;
        }
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, 1);
        cv_enc_cstr(&c->out, "entry");
        files_encode_entry(&c->out, path, &st);
        reply_end(a, c, mark, id);
}

/* Enters the user's creds or answers the error. Returns 0 or -1. */
static int enter(struct agent *a, struct conn *c, uint32_t id, const struct creds *cr,
                 struct creds_saved *saved)
{
        int rc = creds_enter(cr, saved);
        if (rc < 0)
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "switching to user %s: %s", cr->name,
                                strerror(-rc));
        return rc < 0 ? -1 : 0;
}

/* The request's `path` resolved, then the user's creds entered; or the error
 * answered and -1. */
static int begin(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body,
                 char path[PATH_MAX], struct creds_saved *saved)
{
        struct creds cr;
        if (files_request_path(a, c, id, body, "path", &cr, path, PATH_MAX) < 0)
                return -1;
        return enter(a, c, id, &cr, saved);
}

void files_stat_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct creds_saved saved;
        char path[PATH_MAX];
        if (begin(a, c, id, body, path, &saved) < 0)
                return;
        reply_entry(a, c, id, path);
        creds_leave(&saved);
}

struct lister {
        struct cv_buf *b;
        size_t count;
        int err;
        char failed[PATH_MAX];
};

static int skip_dots(const struct dirent *d)
{
        return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

/* Encodes the entries under `dir`, `depth` levels down, sorted by name like envd's walk. */
static void list_dir(struct lister *l, const char *dir, unsigned depth)
{
        struct dirent **names;
        int n = scandir(dir, &names, skip_dots, alphasort);
        if (n < 0) {
                if (!l->err) {
                        l->err = errno;
                        snprintf(l->failed, sizeof(l->failed), "%s", dir);
                }
                return;
        }
        for (int i = 0; i < n; i++) {
                char path[PATH_MAX];
                int len = snprintf(path, sizeof(path), "%s%s%s", dir,
                                   dir[strlen(dir) - 1] == '/' ? "" : "/", names[i]->d_name);
                struct stat st;
                if (l->err == 0 && len > 0 && (size_t)len < sizeof(path) && lstat(path, &st) == 0) {
                        if (++l->count > LIST_MAX_ENTRIES) {
                                l->err = E2BIG;
                                snprintf(l->failed, sizeof(l->failed), "%s", dir);
                        } else {
                                files_encode_entry(l->b, path, &st);
                                if (depth > 1 && S_ISDIR(st.st_mode))
                                        list_dir(l, path, depth - 1);
                        }
                }
                free(names[i]);
        }
        free(names);
}

void files_list_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct creds_saved saved;
        char path[PATH_MAX];
        uint64_t depth = 1;
        int rc = cv_map_get_uint(body, "depth", &depth);
        if ((rc < 0 && rc != -ENOENT) || depth < 1) {
                conn_send_error(a, c, id, "invalid_argument", "depth should be at least one");
                return;
        }
        if (depth > LIST_MAX_DEPTH)
                depth = LIST_MAX_DEPTH;
        if (begin(a, c, id, body, path, &saved) < 0)
                return;
        struct stat st;
        if (stat(path, &st) < 0) {
                svc_send_errno(a, c, id, errno, "list", path);
        } else if (!S_ISDIR(st.st_mode)) {
                svc_send_errno(a, c, id, ENOTDIR, "list", path);
        } else {
                /* Entries go to scratch first: their count heads the array. */
                struct cv_buf *s = &a->scratch;
                cv_buf_reset(s);
                struct lister l = {.b = s};
                list_dir(&l, path, (unsigned)depth);
                if (l.err == E2BIG) {
                        conn_send_error(a, c, id, "invalid_argument",
                                        "list %.3800s: more than %u entries, use a smaller depth",
                                        path, LIST_MAX_ENTRIES);
                } else if (l.err) {
                        svc_send_errno(a, c, id, l.err, "list", l.failed);
                } else if (s->err) {
                        conn_send_error(a, c, id, CV_ERR_INTERNAL, "encoding the listing: %s",
                                        strerror(-s->err));
                } else {
                        size_t mark;
                        cv_out_begin(&c->out, &mark);
                        cv_enc_map(&c->out, 1);
                        cv_enc_cstr(&c->out, "entries");
                        cv_enc_array(&c->out, l.count);
                        cv_buf_append(&c->out, cv_buf_head(s), cv_buf_pending(s));
                        reply_end(a, c, mark, id);
                }
                cv_buf_reset(s);
        }
        creds_leave(&saved);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)ftw;
        int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
        return rc < 0 ? errno : 0;
}

void files_remove_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct creds_saved saved;
        char path[PATH_MAX];
        if (begin(a, c, id, body, path, &saved) < 0)
                return;
        struct stat st;
        int err = 0;
        if (lstat(path, &st) < 0)
                err = errno;
        else if (!S_ISDIR(st.st_mode))
                err = unlink(path) < 0 ? errno : 0;
        else
                err = nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        if (err < 0)
                err = errno;
        creds_leave(&saved);
        if (err)
                svc_send_errno(a, c, id, err, "remove", path);
        else
                svc_reply_ok_empty(c, id);
}

/* --- rename across file systems --------------------------------------------- */

#define MOVE_PIECE (64u << 10) /* bytes copied per read */
#define MOVE_MAX_DEPTH 512u    /* directory levels a moved tree may have */

/* What mv keeps of a copied entry: owner (EPERM ignored: not the caller's to
 * give), then mode (after chown, which clears set-id bits), then times. */
static int copy_attrs(int fd, const char *path, const struct stat *st)
{
        struct timespec t[2] = {st->st_atim, st->st_mtim};
        bool link = S_ISLNK(st->st_mode);
        int rc =
            fd >= 0 ? fchown(fd, st->st_uid, st->st_gid) : lchown(path, st->st_uid, st->st_gid);
        if (rc < 0 && errno != EPERM)
                return -errno;
        if (!link &&
            (fd >= 0 ? fchmod(fd, st->st_mode & 07777) : chmod(path, st->st_mode & 07777)) < 0)
                return -errno;
        rc = fd >= 0 ? futimens(fd, t)
                     : utimensat(AT_FDCWD, path, t, link ? AT_SYMLINK_NOFOLLOW : 0);
        return rc < 0 ? -errno : 0;
}

static int copy_file(const char *from, int out, const struct stat *st)
{
        int in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (in < 0)
                return -errno;
        char *buf = malloc(MOVE_PIECE);
        int rc = buf ? 0 : -ENOMEM;
        while (rc == 0) {
                ssize_t n = read(in, buf, MOVE_PIECE);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        rc = n < 0 ? -errno : 0;
                        break;
                }
                for (ssize_t off = 0; off < n && rc == 0;) {
                        ssize_t w = write(out, buf + off, (size_t)(n - off));
                        if (w < 0 && errno != EINTR)
                                rc = -errno;
                        else if (w > 0)
                                off += w;
                }
        }
        free(buf);
        close(in);
        return rc < 0 ? rc : copy_attrs(out, NULL, st);
}

static int copy_entry(const char *from, const char *to, unsigned depth);

static int copy_dir(const char *from, const char *to, const struct stat *st, unsigned depth)
{
        if (depth >= MOVE_MAX_DEPTH)
                return -ELOOP;
        if (mkdir(to, 0700) < 0)
                return -errno;
        DIR *d = opendir(from);
        char *f = malloc(2 * PATH_MAX);
        int rc = !d ? -errno : !f ? -ENOMEM : 0;
        while (rc == 0) {
                errno = 0;
                struct dirent *e = readdir(d);
                if (!e) {
                        rc = errno ? -errno : 0;
                        break;
                }
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                char *t = f + PATH_MAX;
                int a = snprintf(f, PATH_MAX, "%s/%s", from, e->d_name);
                int b = snprintf(t, PATH_MAX, "%s/%s", to, e->d_name);
                if (a < 0 || a >= PATH_MAX || b < 0 || b >= PATH_MAX)
                        rc = -ENAMETOOLONG;
                else
                        rc = copy_entry(f, t, depth + 1);
        }
        free(f);
        if (d)
                closedir(d);
        return rc < 0 ? rc : copy_attrs(-1, to, st);
}

/* `from` (a file, symlink or directory tree) copied to the new `to`. */
static int copy_entry(const char *from, const char *to, unsigned depth)
{
        struct stat st;
        if (lstat(from, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return copy_dir(from, to, &st, depth);
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlink(from, target, sizeof(target) - 1);
                if (n < 0)
                        return -errno;
                target[n] = '\0';
                if (symlink(target, to) < 0)
                        return -errno;
                return copy_attrs(-1, to, &st);
        }
        if (!S_ISREG(st.st_mode))
                return -EOPNOTSUPP;
        int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        int rc = copy_file(from, out, &st);
        if (close(out) < 0 && rc == 0)
                rc = -errno;
        return rc;
}

/* A path and all under it removed (files.remove's walk): 0 or -errno. */
static int remove_tree(const char *path)
{
        struct stat st;
        if (lstat(path, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return unlink(path) < 0 ? -errno : 0;
        int err = nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        return err < 0 ? -errno : -err;
}

/*
 * rename(2) across file systems, as mv does it (the guest's /tmp is a tmpfs of
 * its own, where E2B has one root file system): a file or symlink is copied
 * next to `to` under files.write's temporary name (fswatch.c reports its events
 * under `to`'s name) and renamed over `to`; a directory tree is copied to `to`
 * (an empty directory there replaced, as rename(2) does). The source is removed
 * once the copy is in place. 0, or -errno with any partial copy removed
 * (-EXDEV for a failed copy); a source that cannot be removed is that error,
 * the copy kept (as mv).
 */
static int move_across(const char *from, const char *to)
{
        struct stat st, dst;
        if (lstat(from, &st) < 0)
                return -EXDEV;
        char tmp[PATH_MAX + 32]; /* room for the temporary's suffix */
        const char *slash = strrchr(to, '/');
        if (S_ISDIR(st.st_mode)) {
                if (lstat(to, &dst) == 0 && S_ISDIR(dst.st_mode) && rmdir(to) < 0)
                        return -EXDEV;
                snprintf(tmp, sizeof(tmp), "%s", to);
        } else {
                uint32_t rnd;
                if (!slash || getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
                        rnd = (uint32_t)getpid() ^ (uint32_t)st.st_ino;
                int n = snprintf(tmp, sizeof(tmp), "%.*s/.%s.cellvm-%08x",
                                 slash ? (int)(slash - to) : 0, to, slash ? slash + 1 : to, rnd);
                if (!slash || n < 0 || n >= PATH_MAX)
                        return -EXDEV;
        }
        if (lstat(tmp, &dst) == 0) /* not this copy's to remove */
                return -EXDEV;
        int rc = copy_entry(from, tmp, 0);
        if (rc == 0 && strcmp(tmp, to) != 0 && rename(tmp, to) < 0)
                rc = -errno;
        if (rc < 0) {
                (void)remove_tree(tmp);
                return -EXDEV;
        }
        return remove_tree(from);
}

void files_rename_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct creds cr;
        struct creds_saved saved;
        char from[PATH_MAX], to[PATH_MAX];
        if (files_request_path(a, c, id, body, "old_path", &cr, from, sizeof(from)) < 0 ||
            files_request_path(a, c, id, body, "new_path", &cr, to, sizeof(to)) < 0 ||
            enter(a, c, id, &cr, &saved) < 0)
                return;
        /* As E2B's envd (services/filesystem/move.go): the destination's
         * missing parent directories are created first. */
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", to);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
                *slash = '\0';
                /* A failure here shows in rename's own error below. */
                (void)files_make_dirs_owned(parent, &cr, &saved);
        }
        int err = rename(from, to) < 0 ? errno : 0;
        if (err == EXDEV)
                err = -move_across(from, to);
        if (err) {
                /* Both paths, as Go's os.Rename error (*LinkError) names them. */
                char both[2 * PATH_MAX + 2];
                snprintf(both, sizeof(both), "%s %s", from, to);
                svc_send_errno(a, c, id, err, "rename", both);
        } else
                reply_entry(a, c, id, to);
        creds_leave(&saved);
}

int files_make_dirs(char *path)
{
        for (char *p = path + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                int rc = mkdir(path, 0755);
                int err = errno;
                *p = '/';
                if (rc < 0 && err != EEXIST)
                        return -err;
        }
        if (mkdir(path, 0755) == 0)
                return 1;
        int err = errno;
        struct stat st;
        if (err == EEXIST && stat(path, &st) == 0)
                return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
        return -err;
}

/* Makes the missing component `name` of the directory `dfd` for the user of
 * `cr`, owned by them: as the user, else (EACCES) as root and chowned, as
 * envd's EnsureDirs does. 1 made, 0 there already, or -errno. */
static int make_one_owned(int dfd, const char *name, const struct creds *cr,
                          struct creds_saved *saved)
{
        if (mkdirat(dfd, name, 0755) == 0)
                return 1;
        int err = errno;
        if (err == EEXIST)
                return 0;
        if (err != EACCES)
                return -err;
        creds_leave(saved);
        int rc = mkdirat(dfd, name, 0755) == 0 ? 1 : -errno;
        if (rc == 1 && fchownat(dfd, name, cr->uid, cr->gid, AT_SYMLINK_NOFOLLOW) < 0) {
                rc = -errno;
                if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
                        log_error("removing %s after a failed chown: %s", name, strerror(errno));
        }
        /* Root switching back to a user it switched from cannot fail; if it
         * did, what the caller does next would run as root: stop here. */
        int back = creds_enter(cr, saved);
        if (back < 0) {
                log_error("switching back to user %s: %s", cr->name, strerror(-back));
                abort();
        }
        return rc == -EEXIST ? 0 : rc;
}

int files_make_dirs_owned(char *path, const struct creds *cr, struct creds_saved *saved)
{
        int rc = files_make_dirs(path);
        if (rc != -EACCES || !saved->active || path[0] != '/')
                return rc;
        /* The walk opens each component with O_NOFOLLOW: a directory the user
         * turned into a symlink never gets a root-made child elsewhere; a path
         * through a symlink keeps the user's own EACCES. */
        int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -EACCES;
        int made = 0;
        for (char *p = path + 1; *p;) {
                char *end = strchr(p, '/');
                if (end)
                        *end = '\0';
                int next = -1;
                if (*p) {
                        made = 0;
                        next = openat(dfd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (next < 0 && errno == ENOENT) {
                                made = make_one_owned(dfd, p, cr, saved);
                                next = made < 0
                                           ? -1
                                           : openat(dfd, p,
                                                    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        }
                        int err = made < 0 ? -made : errno;
                        if (end)
                                *end = '/';
                        if (next < 0) {
                                close(dfd);
                                return err == ELOOP || err == ENOTDIR ? -EACCES : -err;
                        }
                        close(dfd);
                        dfd = next;
                } else if (end) {
                        *end = '/';
                }
                if (!end)
                        break;
                p = end + 1;
        }
        close(dfd);
        return made;
}

void files_mkdir_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct creds cr;
        struct creds_saved saved;
        char path[PATH_MAX];
        if (files_request_path(a, c, id, body, "path", &cr, path, PATH_MAX) < 0 ||
            enter(a, c, id, &cr, &saved) < 0)
                return;
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/')
                path[--n] = '\0';
        int rc = files_make_dirs_owned(path, &cr, &saved);
        struct stat st;
        /* The path exists and is no directory: EEXIST (E2B's envd answers
         * "path already exists but it is not a directory"), where a file
         * among the parents stays ENOTDIR. */
        if (rc == -ENOTDIR && stat(path, &st) == 0 && !S_ISDIR(st.st_mode))
                rc = -EEXIST;
        creds_leave(&saved);
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "make_dir", path);
                return;
        }
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, 1);
        cv_enc_cstr(&c->out, "created");
        cv_enc_bool(&c->out, rc == 1);
        reply_end(a, c, mark, id);
}
