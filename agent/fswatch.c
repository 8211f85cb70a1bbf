/*
 * FILE_WATCH (section 9): inotify on a directory (and, when recursive, its
 * subdirectories, including ones created later), relayed as FILE_EVENT
 * messages with E2B's event types. Runs until CANCEL or until the watched
 * directory goes away (then OK). Reading pauses while the connection's output
 * is over its high water; the kernel queues events meanwhile.
 */

#include "fswatch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cbor_util.h"
#include "conn.h"
#include "creds.h"
#include "files.h"
#include "log.h"
#include "loop.h"
#include "msgtypes.h"
#include "svc.h"
#include "writer.h"

#define WATCH_MASK                                                                                 \
        (IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_ATTRIB |             \
         IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
/* Directories one recursive watch follows. */
#define WATCH_MAX_DIRS 4096

struct watched_dir {
        int wd;
        char *rel; /* relative to the root, "" for the root */
};

struct fswatch {
        struct svc_req r;
        struct watch w; /* the inotify fd */
        struct creds cr;
        bool recursive;
        struct watched_dir *dirs;
        size_t ndirs, cap;
        uint32_t temp_cookie; /* the rename of a files.write temporary into place */
        struct fswatch *next; /* in `watches` */
        char root[PATH_MAX];
};

/* The running watches, for fswatch_flush(). */
static struct fswatch *watches;

static void fswatch_free(struct agent *a, struct fswatch *fw)
{
        for (struct fswatch **p = &watches; *p; p = &(*p)->next)
                if (*p == fw) {
                        *p = fw->next;
                        break;
                }
        svc_detach(&fw->r);
        watch_close(a, &fw->w);
        for (size_t i = 0; i < fw->ndirs; i++)
                free(fw->dirs[i].rel);
        free(fw->dirs);
        free(fw);
}

static void fswatch_cancel(struct agent *a, struct svc_req *r, bool notify)
{
        struct fswatch *fw = (struct fswatch *)r;
        if (notify && r->conn)
                conn_send_error(a, r->conn, r->id, CV_ERR_CANCELLED, "watch of %.3800s stopped",
                                fw->root);
        fswatch_free(a, fw);
}

/* Adds a watch on root/rel (creds must be active), and its subdirectories if recursive. */
static int add_dir(struct fswatch *fw, const char *rel)
{
        if (fw->ndirs >= WATCH_MAX_DIRS)
                return -ENOSPC;
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s%s%s", fw->root, rel[0] ? "/" : "", rel);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        int wd = inotify_add_watch(fw->w.fd, path, WATCH_MASK);
        if (wd < 0)
                return -errno;
        if (fw->ndirs == fw->cap) {
                size_t cap = fw->cap ? fw->cap * 2 : 8;
                struct watched_dir *d = realloc(fw->dirs, cap * sizeof(*d));
                if (!d)
                        return -ENOMEM;
                fw->dirs = d;
                fw->cap = cap;
        }
        char *copy = strdup(rel);
        if (!copy)
                return -ENOMEM;
        fw->dirs[fw->ndirs++] = (struct watched_dir){.wd = wd, .rel = copy};
        if (!fw->recursive)
                return 0;
        DIR *dir = opendir(path);
        if (!dir)
                return 0; /* gone or unreadable already: its own events say so */
        struct dirent *de;
        int rc = 0;
        while (rc == 0 && (de = readdir(dir))) {
                if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                char sub[PATH_MAX];
                n = snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
                if (n > 0 && (size_t)n < sizeof(sub))
                        rc = add_dir(fw, sub);
        }
        closedir(dir);
        return rc;
}

static const char *dir_of(const struct fswatch *fw, int wd)
{
        for (size_t i = 0; i < fw->ndirs; i++)
                if (fw->dirs[i].wd == wd)
                        return fw->dirs[i].rel;
        return NULL;
}

/* E2B's types, mapped from inotify as fsnotify (used by envd) maps them. */
static const char *event_type(uint32_t mask)
{
        if (mask & (IN_CREATE | IN_MOVED_TO))
                return "create";
        if (mask & (IN_DELETE | IN_DELETE_SELF))
                return "remove";
        if (mask & (IN_MOVED_FROM | IN_MOVE_SELF))
                return "rename";
        if (mask & IN_MODIFY)
                return "write";
        if (mask & IN_ATTRIB)
                return "chmod";
        return NULL;
}

static void send_event(struct conn *c, uint32_t id, const char *name, const char *type)
{
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, 2);
        cv_enc_cstr(&c->out, "name");
        cv_enc_cstr(&c->out, name);
        cv_enc_cstr(&c->out, "type");
        cv_enc_cstr(&c->out, type);
        if (cv_out_end(&c->out, mark, CV_MSG_FILE_EVENT, id) < 0)
                log_error("conn %u: id %u: queueing FILE_EVENT failed", c->num, id);
        conn_touch(c);
}

/*
 * files.write writes "DIR/.NAME.cellvm-XXXXXXXX" and renames it onto NAME
 * (file_transfer.c: atomic). envd writes NAME in place, and E2B's watchers
 * expect its events: so the temporary's events are reported under NAME, and
 * the rename into place (MOVED_FROM the temporary, MOVED_TO NAME) not at all.
 * Returns the length of NAME in `base` when `base` names such a temporary.
 */
static size_t write_temp_target(const char *base)
{
        static const char sfx[] = ".cellvm-";
        size_t len = strlen(base), hex = 8, slen = sizeof(sfx) - 1;
        if (base[0] != '.' || len < 2 + slen + hex)
                return 0;
        const char *tail = base + len - hex - slen;
        if (memcmp(tail, sfx, slen) != 0)
                return 0;
        for (size_t i = 0; i < hex; i++) {
                char ch = tail[slen + i];
                if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
                        return 0;
        }
        return (size_t)(tail - base) - 1;
}

/* Handles one event; returns false once the watch has ended (and was freed). */
static bool handle_event(struct agent *a, struct fswatch *fw, const struct inotify_event *ev)
{
        struct conn *c = fw->r.conn;
        const char *rel = dir_of(fw, ev->wd);
        if (ev->mask & IN_IGNORED) {
                if (rel && rel[0] == '\0') { /* the root is gone */
                        svc_reply_ok_empty(c, fw->r.id);
                        fswatch_free(a, fw);
                        return false;
                }
                return true;
        }
        if (!rel || (ev->mask & IN_Q_OVERFLOW))
                return true;
        /* Self events of subdirectories are reported by their parent. */
        if ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) && rel[0] != '\0')
                return true;
        const char *type = event_type(ev->mask);
        if (!type)
                return true;
        const char *base = ev->len ? ev->name : "";
        int baselen = (int)strlen(base);
        size_t target = ev->len && !(ev->mask & IN_ISDIR) ? write_temp_target(base) : 0;
        if (target) {
                if (ev->mask & IN_MOVED_FROM) { /* into place: its MOVED_TO follows */
                        fw->temp_cookie = ev->cookie;
                        return true;
                }
                if (ev->mask & IN_DELETE) /* a failed write's: NAME is as it was */
                        return true;
                base++; /* the leading dot */
                baselen = (int)target;
        } else if ((ev->mask & IN_MOVED_TO) && ev->cookie && ev->cookie == fw->temp_cookie) {
                fw->temp_cookie = 0;
                return true;
        }
        char name[PATH_MAX];
        int n = ev->len ? snprintf(name, sizeof(name), "%s%s%.*s", rel, rel[0] ? "/" : "", baselen,
                                   base)
                        : snprintf(name, sizeof(name), "%s", rel);
        if (n < 0 || (size_t)n >= sizeof(name))
                return true;
        send_event(c, fw->r.id, name, type);
        if (fw->recursive && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && (ev->mask & IN_ISDIR)) {
                struct creds_saved saved;
                if (creds_enter(&fw->cr, &saved) == 0) {
                        int rc = add_dir(fw, name);
                        creds_leave(&saved);
                        if (rc < 0)
                                log_warn("watch %s: adding %s: %s", fw->root, name, strerror(-rc));
                }
        }
        return true;
}

static void fswatch_resume(struct agent *a, struct svc_req *r)
{
        struct fswatch *fw = (struct fswatch *)r;
        int rc = watch_set(a, &fw->w, EPOLLIN);
        if (rc < 0)
                log_error("watch %s: epoll_ctl: %s", fw->root, strerror(-rc));
}

static void on_inotify(struct agent *a, struct watch *w, uint32_t events)
{
        (void)events;
        struct fswatch *fw = (struct fswatch *)((char *)w - offsetof(struct fswatch, w));
        _Alignas(struct inotify_event) char buf[16384];
        ssize_t n = read(w->fd, buf, sizeof(buf));
        if (n < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        log_error("watch %s: read(inotify): %s", fw->root, strerror(errno));
                return;
        }
        for (char *p = buf; p < buf + n;) {
                const struct inotify_event *ev = (const struct inotify_event *)p;
                p += sizeof(*ev) + ev->len;
                if (!handle_event(a, fw, ev))
                        return;
        }
        if (conn_over_high_water(fw->r.conn)) {
                int rc = watch_set(a, &fw->w, 0);
                if (rc < 0)
                        log_error("watch %s: epoll_ctl: %s", fw->root, strerror(-rc));
        }
}

void fswatch_flush(struct agent *a)
{
        for (struct fswatch *fw = watches, *next; fw; fw = next) {
                next = fw->next; /* on_inotify may free fw (its directory gone) */
                if (!conn_over_high_water(fw->r.conn))
                        on_inotify(a, &fw->w, EPOLLIN);
        }
}

static const struct svc_ops fswatch_ops = {
    .name = "watch",
    .cancel = fswatch_cancel,
    .resume = fswatch_resume,
};

void fswatch_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct fswatch *fw = calloc(1, sizeof(*fw));
        if (!fw) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                return;
        }
        fw->w = (struct watch){.fd = -1, .fn = on_inotify};
        int rc = cv_map_get_bool(body, "recursive", &fw->recursive);
        if ((rc < 0 && rc != -ENOENT) ||
            files_request_path(a, c, id, body, "path", &fw->cr, fw->root, sizeof(fw->root)) < 0) {
                if (rc < 0 && rc != -ENOENT)
                        conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`recursive` must be a bool");
                free(fw);
                return;
        }
        size_t len = strlen(fw->root);
        while (len > 1 && fw->root[len - 1] == '/')
                fw->root[--len] = '\0';
        fw->w.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fw->w.fd < 0) {
                svc_send_errno(a, c, id, errno, "watch", fw->root);
                free(fw);
                return;
        }
        struct creds_saved saved;
        rc = creds_enter(&fw->cr, &saved);
        if (rc == 0) {
                struct stat st;
                rc = stat(fw->root, &st) < 0 ? -errno : !S_ISDIR(st.st_mode) ? -ENOTDIR : 0;
                if (rc == 0)
                        rc = add_dir(fw, "");
                creds_leave(&saved);
        }
        if (rc == 0)
                rc = watch_set(a, &fw->w, EPOLLIN);
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "watch", fw->root);
                fswatch_free(a, fw);
                return;
        }
        svc_attach(c, &fw->r, id, &fswatch_ops);
        fw->next = watches;
        watches = fw;
        /* The client may act on the directory as soon as this arrives. */
        int erc = cv_out_msg(&c->out, CV_MSG_WATCH_STARTED, 0, id, NULL, 0);
        if (erc < 0)
                log_error("conn %u: id %u: queueing WATCH_STARTED: %s", c->num, id, strerror(-erc));
        conn_touch(c);
}
