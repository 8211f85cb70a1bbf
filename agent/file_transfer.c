/*
 * FILE_WRITE uploads and FILE_READ downloads (section 9), streamed with bounded
 * memory. An upload writes each FILE_DATA chunk to a temporary file in the
 * target's directory as it arrives and renames it over the target at the end,
 * so a dropped connection or a CANCEL leaves the old content (the temporary
 * file is unlinked). A download reads the next chunk only while the
 * connection's output is below its high water.
 */

#include "file_transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "conn.h"
#include "creds.h"
#include "files.h"
#include "fswatch.h"
#include "log.h"
#include "loop.h"
#include "msgtypes.h"
#include "svc.h"
#include "writer.h"

/* Bytes of file data per FILE_CHUNK message. */
#define FILE_CHUNK_MAX (1u << 20)

struct upload {
        struct svc_req r;
        struct creds cr;
        int fd;
        mode_t mode;
        uint64_t written;
        char path[PATH_MAX];
        char tmp[PATH_MAX];
};

struct download {
        struct svc_req r;
        int fd;
        uint64_t sent;
        char path[PATH_MAX];
};

/* --- upload --- */

static void upload_free(struct agent *a, struct upload *u, bool unlink_tmp)
{
        (void)a;
        svc_detach(&u->r);
        if (u->fd >= 0 && close(u->fd) < 0)
                log_warn("upload %s: close: %s", u->tmp, strerror(errno));
        if (unlink_tmp) {
                struct creds_saved saved;
                int rc = creds_enter(&u->cr, &saved);
                if (rc == 0 && unlink(u->tmp) < 0)
                        rc = -errno;
                creds_leave(&saved);
                if (rc < 0)
                        log_warn("upload: removing %s: %s", u->tmp, strerror(-rc));
        }
        free(u);
}

static void upload_cancel(struct agent *a, struct svc_req *r, bool notify)
{
        struct upload *u = (struct upload *)r;
        log_info("conn %u: upload to %s %s after %llu bytes", r->conn ? r->conn->num : 0, u->path,
                 notify ? "cancelled" : "dropped by a disconnect", (unsigned long long)u->written);
        if (notify && r->conn)
                conn_send_error(a, r->conn, r->id, CV_ERR_CANCELLED, "upload to %.3800s cancelled",
                                u->path);
        upload_free(a, u, true);
}

/* The last chunk arrived: give the file its mode and put it in place. */
static void upload_commit(struct agent *a, struct upload *u)
{
        struct conn *c = u->r.conn;
        uint32_t id = u->r.id;
        int rc = fchmod(u->fd, u->mode) < 0 ? -errno : 0;
        if (rc == 0 && close(u->fd) < 0)
                rc = -errno;
        u->fd = -1;
        struct creds_saved saved;
        if (rc == 0)
                rc = creds_enter(&u->cr, &saved);
        if (rc == 0) {
                if (rename(u->tmp, u->path) < 0)
                        rc = -errno;
                creds_leave(&saved);
        }
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "write", u->path);
                upload_free(a, u, true);
                return;
        }
        log_debug("conn %u: wrote %llu bytes to %s", c->num, (unsigned long long)u->written,
                  u->path);
        fswatch_flush(a);
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, 3);
        cv_enc_cstr(&c->out, "name");
        const char *slash = strrchr(u->path, '/');
        cv_enc_cstr(&c->out, slash ? slash + 1 : u->path);
        cv_enc_cstr(&c->out, "type");
        cv_enc_cstr(&c->out, "file");
        cv_enc_cstr(&c->out, "path");
        cv_enc_cstr(&c->out, u->path);
        if (cv_out_end(&c->out, mark, CV_MSG_OK, id) < 0)
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "encoding the reply");
        conn_touch(c);
        upload_free(a, u, false);
}

static void upload_data(struct agent *a, struct svc_req *r, uint16_t type, const cbor_item_t *body)
{
        (void)type;
        struct upload *u = (struct upload *)r;
        const uint8_t *p = NULL;
        size_t n = 0;
        int rc = cv_map_get_bytes(body, "data", &p, &n);
        bool eof = false;
        int rc2 = cv_map_get_bool(body, "eof", &eof);
        if ((rc < 0 && rc != -ENOENT) || (rc2 < 0 && rc2 != -ENOENT)) {
                conn_send_error(a, r->conn, r->id, CV_ERR_BAD_REQUEST,
                                "FILE_DATA: `data` must be bytes and `eof` a bool");
                upload_free(a, u, true);
                return;
        }
        if (n > 0) {
                rc = cv_write_all(u->fd, p, n);
                if (rc < 0) {
                        svc_send_errno(a, r->conn, r->id, -rc, "write", u->path);
                        upload_free(a, u, true);
                        return;
                }
                u->written += n;
        }
        if (eof)
                upload_commit(a, u);
}

static const struct svc_ops upload_ops = {
    .name = "upload",
    .cancel = upload_cancel,
    .data = upload_data,
};

/* Opens a fresh temporary file next to `path` ("DIR/.NAME.cellvm-XXXXXXXX"). */
static int open_temp(const char *path, char *tmp, size_t size)
{
        const char *slash = strrchr(path, '/');
        int dirlen = (int)(slash - path);
        for (int attempt = 0; attempt < 16; attempt++) {
                uint32_t rnd;
                if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
                        rnd = (uint32_t)now_mono() ^ (uint32_t)attempt;
                int n = snprintf(tmp, size, "%.*s/.%s.cellvm-%08x", dirlen, path, slash + 1, rnd);
                if (n < 0 || (size_t)n >= size)
                        return -ENAMETOOLONG;
                int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd >= 0 || errno != EEXIST)
                        return fd >= 0 ? fd : -errno;
        }
        return -EEXIST;
}

/* E2B's files.write creates the directories a new file's path names. */
static int make_parent_dirs(const char *path, const struct creds *cr, struct creds_saved *saved)
{
        char parent[PATH_MAX];
        const char *slash = strrchr(path, '/');
        if (!slash || slash == path)
                return 0;
        size_t n = (size_t)(slash - path);
        if (n >= sizeof(parent))
                return -ENAMETOOLONG;
        memcpy(parent, path, n);
        parent[n] = '\0';
        int rc = files_make_dirs_owned(parent, cr, saved);
        return rc < 0 ? rc : 0;
}

void files_write_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct upload *u = calloc(1, sizeof(*u));
        if (!u) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                return;
        }
        u->fd = -1;
        if (files_request_path(a, c, id, body, "path", &u->cr, u->path, sizeof(u->path)) < 0) {
                free(u);
                return;
        }
        struct creds_saved saved;
        int rc = creds_enter(&u->cr, &saved);
        if (rc < 0) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "switching to user %s: %s", u->cr.name,
                                strerror(-rc));
                free(u);
                return;
        }
        /* A replaced file keeps its permissions; a new one gets 0644 like envd's. */
        struct stat st;
        u->mode = 0644;
        if (stat(u->path, &st) == 0) {
                if (S_ISDIR(st.st_mode))
                        rc = -EISDIR;
                u->mode = st.st_mode & 07777;
        }
        if (rc == 0)
                rc = make_parent_dirs(u->path, &u->cr, &saved);
        if (rc == 0)
                rc = open_temp(u->path, u->tmp, sizeof(u->tmp));
        creds_leave(&saved);
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "write", u->path);
                free(u);
                return;
        }
        u->fd = rc;
        svc_attach(c, &u->r, id, &upload_ops);
        log_debug("conn %u: upload id %u to %s via %s", c->num, id, u->path, u->tmp);
}

/* --- download --- */

static void download_free(struct download *d)
{
        svc_detach(&d->r);
        if (d->fd >= 0 && close(d->fd) < 0)
                log_warn("download %s: close: %s", d->path, strerror(errno));
        free(d);
}

static void download_cancel(struct agent *a, struct svc_req *r, bool notify)
{
        struct download *d = (struct download *)r;
        if (notify && r->conn)
                conn_send_error(a, r->conn, r->id, CV_ERR_CANCELLED,
                                "download of %.3800s cancelled", d->path);
        download_free(d);
}

/*
 * Appends FILE_CHUNK messages while the connection has room. The chunk is read
 * straight into the output buffer behind a 4-byte-length byte-string head
 * (0x5a, well-formed CBOR though not the shortest form), then the real length
 * is patched in: no copy of the data in user space.
 */
static void download_resume(struct agent *a, struct svc_req *r)
{
        struct download *d = (struct download *)r;
        struct conn *c = r->conn;
        static const uint8_t head[] = {0xa1, 0x64, 'd', 'a', 't', 'a', 0x5a, 0, 0, 0, 0};
        while (!conn_over_high_water(c)) {
                size_t mark;
                cv_out_begin(&c->out, &mark);
                cv_buf_append(&c->out, head, sizeof(head));
                int rc = cv_buf_reserve(&c->out, FILE_CHUNK_MAX);
                if (rc < 0) {
                        cv_out_abort(&c->out, mark);
                        conn_send_error(a, c, r->id, CV_ERR_INTERNAL, "download: %s",
                                        strerror(-rc));
                        download_free(d);
                        return;
                }
                ssize_t n;
                do
                        n = read(d->fd, c->out.data + c->out.len, FILE_CHUNK_MAX);
                while (n < 0 && errno == EINTR);
                if (n <= 0) {
                        cv_out_abort(&c->out, mark);
                        if (n < 0) {
                                svc_send_errno(a, c, r->id, errno, "read", d->path);
                        } else {
                                cv_out_begin(&c->out, &mark);
                                cv_enc_map(&c->out, 1);
                                cv_enc_cstr(&c->out, "size");
                                cv_enc_uint(&c->out, d->sent);
                                if (cv_out_end(&c->out, mark, CV_MSG_OK, r->id) < 0)
                                        conn_send_error(a, c, r->id, CV_ERR_INTERNAL,
                                                        "encoding the reply");
                        }
                        conn_touch(c);
                        download_free(d);
                        return;
                }
                uint8_t *len_at = c->out.data + c->out.len - 4;
                len_at[0] = (uint8_t)(n >> 24);
                len_at[1] = (uint8_t)(n >> 16);
                len_at[2] = (uint8_t)(n >> 8);
                len_at[3] = (uint8_t)n;
                c->out.len += (size_t)n;
                d->sent += (uint64_t)n;
                cv_out_end(&c->out, mark, CV_MSG_FILE_CHUNK, r->id);
                conn_touch(c);
        }
}

static const struct svc_ops download_ops = {
    .name = "download",
    .cancel = download_cancel,
    .resume = download_resume,
};

void files_read_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct download *d = calloc(1, sizeof(*d));
        if (!d) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                return;
        }
        d->fd = -1;
        struct creds cr;
        if (files_request_path(a, c, id, body, "path", &cr, d->path, sizeof(d->path)) < 0) {
                free(d);
                return;
        }
        struct creds_saved saved;
        int rc = creds_enter(&cr, &saved);
        if (rc == 0) {
                /* Never blocking the loop: a FIFO with no writer reads as empty, a
                 * device with nothing to read (a tty) fails with EAGAIN. */
                rc = open(d->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (rc < 0)
                        rc = -errno;
                creds_leave(&saved);
        }
        struct stat st;
        if (rc >= 0) {
                d->fd = rc;
                rc = fstat(d->fd, &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? -EISDIR : 0;
        }
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "read", d->path);
                download_free(d);
                return;
        }
        posix_fadvise(d->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        svc_attach(c, &d->r, id, &download_ops);
        download_resume(a, &d->r);
}
