/* A filesystem-only pause's guest side over an agent connection (fs_snapshot.h). */
#include "fs_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"

/* In the writable layer's tmpfs, beside (not in) the upper layer it archives. */
#define GUEST_ARCHIVE "/run/cellvm-rw/fs.tar"
#define PIECE (1u << 20)
#define TOOL_TIMEOUT_MS (10 * 60 * 1000)
#define STEP_TIMEOUT_MS (60 * 1000)

/* Where a download's FILE_CHUNKs go: at most `left` more bytes (the guest
 * is not trusted to send what it says). */
struct sink {
        int fd;
        uint64_t left;
};

/* Waits for `r`'s terminal reply: 0 (OK), or a negative errno with `err`;
 * CMD_OUTPUT on stderr is kept for the message, FILE_CHUNKs go to `out`
 * when not NULL. */
static int finish(const struct cfs_link *l, void *r, int timeout_ms, struct sink *out,
                  const char *what, char *err, size_t errlen)
{
        char said[300] = "";
        size_t nsaid = 0;
        for (;;) {
                struct cvc_event ev;
                int rc = l->next(r, timeout_ms, &ev);
                if (rc <= 0) {
                        snprintf(err, errlen, "%s: %s", what,
                                 rc == 0 ? "no answer in time" : "the agent connection broke");
                        return rc == 0 ? -ETIMEDOUT : rc;
                }
                const uint8_t *p;
                size_t n;
                const char *stream;
                size_t slen;
                if (ev.type == CV_MSG_FILE_CHUNK && out &&
                    cv_map_get_bytes(ev.root, "data", &p, &n) == 0) {
                        rc = n > out->left ? -EFBIG : write(out->fd, p, n) != (ssize_t)n ? -EIO : 0;
                        if (rc == -EIO && errno)
                                rc = -errno;
                        out->left -= rc == 0 ? n : 0;
                }
                if (rc < 0) {
                        snprintf(err, errlen, "%s: %s", what,
                                 rc == -EFBIG ? "more than the guest's memory holds"
                                              : strerror(-rc));
                        cvc_event_free(&ev);
                        return rc;
                }
                if (ev.type == CV_MSG_CMD_OUTPUT &&
                    cv_map_get_bytes(ev.root, "data", &p, &n) == 0 &&
                    cv_map_get_str(ev.root, "stream", &stream, &slen) == 0 && slen == 6 &&
                    memcmp(stream, "stderr", 6) == 0) {
                        size_t room = sizeof(said) - 1 - nsaid;
                        memcpy(said + nsaid, p, n < room ? n : room);
                        nsaid += n < room ? n : room;
                        said[nsaid] = '\0';
                }
                if (!cv_msg_is_terminal(ev.type)) {
                        cvc_event_free(&ev);
                        continue;
                }
                int64_t code = 0;
                if (ev.type == CV_MSG_ERROR) {
                        snprintf(err, errlen, "%s: %.*s: %.*s", what, (int)ev.u.fail.code_len,
                                 ev.u.fail.code, (int)ev.u.fail.message_len, ev.u.fail.message);
                        rc = -EREMOTEIO;
                } else if (cv_map_get_int(ev.root, "exit_code", &code) == 0 && code != 0) {
                        while (nsaid && (said[nsaid - 1] == '\n' || said[nsaid - 1] == ' '))
                                said[--nsaid] = '\0';
                        snprintf(err, errlen, "%s: exit status %lld%s%s", what, (long long)code,
                                 nsaid ? ": " : "", said);
                        rc = -EIO;
                } else {
                        rc = 0;
                }
                cvc_event_free(&ev);
                return rc;
        }
}

/* Sends one request of `type` and waits for its end (finish). */
static int request(const struct cfs_link *l, uint16_t type, struct cv_buf *b, int timeout_ms,
                   struct sink *out, const char *what, char *err, size_t errlen)
{
        void *r;
        int rc = l->begin(l->ud, type, b, &r);
        if (rc < 0) {
                snprintf(err, errlen, "%s: sending: %s", what, strerror(-rc));
                return rc;
        }
        rc = finish(l, r, timeout_ms, out, what, err, errlen);
        l->end(r);
        return rc;
}

static int run_tool(const struct cfs_link *l, const char *verb, char *err, size_t errlen)
{
        const char *argv[] = {"/usr/bin/python3", "-I", "/usr/lib/cellvm/fs-snapshot", verb,
                              GUEST_ARCHIVE};
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 4);
        cv_enc_cstr(&b, "argv");
        cv_enc_array(&b, sizeof(argv) / sizeof(argv[0]));
        for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
                cv_enc_cstr(&b, argv[i]);
        cv_enc_cstr(&b, "system");
        cv_enc_bool(&b, true);
        cv_enc_cstr(&b, "user");
        cv_enc_cstr(&b, "root");
        cv_enc_cstr(&b, "timeout_ms");
        cv_enc_uint(&b, TOOL_TIMEOUT_MS);
        char what[64];
        snprintf(what, sizeof(what), "fs-snapshot %s in the guest", verb);
        int rc = request(l, CV_MSG_CMD_START, &b, TOOL_TIMEOUT_MS + 10000, NULL, what, err, errlen);
        cv_buf_free(&b);
        return rc;
}

static void enc_path(struct cv_buf *b)
{
        cv_enc_map(b, 2);
        cv_enc_cstr(b, "path");
        cv_enc_cstr(b, GUEST_ARCHIVE);
        cv_enc_cstr(b, "user");
        cv_enc_cstr(b, "root");
}

int cfs_pack(const struct cfs_link *l, const char *path, uint64_t max_bytes, char *err,
             size_t errlen)
{
        int rc = run_tool(l, "pack", err, errlen);
        if (rc < 0)
                return rc;
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
                rc = -errno;
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                return rc;
        }
        struct cv_buf b;
        cv_buf_init(&b);
        enc_path(&b);
        struct sink out = {.fd = fd, .left = max_bytes};
        rc = request(l, CV_MSG_FILE_READ, &b, STEP_TIMEOUT_MS, &out, "reading the guest's archive",
                     err, errlen);
        cv_buf_free(&b);
        if (close(fd) < 0 && rc == 0) {
                rc = -errno;
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
        }
        return rc;
}

/* FILE_WRITE of `fd`'s content to GUEST_ARCHIVE, in pieces. */
static int upload(const struct cfs_link *l, int fd, char *err, size_t errlen)
{
        static const char what[] = "sending the archive to the guest";
        uint8_t *piece = malloc(PIECE);
        if (!piece) {
                snprintf(err, errlen, "%s: out of memory", what);
                return -ENOMEM;
        }
        struct cv_buf b;
        cv_buf_init(&b);
        enc_path(&b);
        void *r;
        int rc = l->begin(l->ud, CV_MSG_FILE_WRITE, &b, &r);
        cv_buf_free(&b);
        if (rc < 0) {
                free(piece);
                snprintf(err, errlen, "%s: %s", what, strerror(-rc));
                return rc;
        }
        for (bool eof = false; rc == 0 && !eof;) {
                ssize_t n = read(fd, piece, PIECE);
                if (n < 0) {
                        rc = -errno;
                        break;
                }
                eof = n == 0;
                cv_buf_init(&b);
                cv_enc_map(&b, 1);
                if (eof) {
                        cv_enc_cstr(&b, "eof");
                        cv_enc_bool(&b, true);
                } else {
                        cv_enc_cstr(&b, "data");
                        cv_enc_bytes(&b, piece, (size_t)n);
                }
                rc = l->more(r, CV_MSG_FILE_DATA, &b);
                cv_buf_free(&b);
        }
        free(piece);
        if (rc < 0)
                snprintf(err, errlen, "%s: %s", what, strerror(-rc));
        else
                rc = finish(l, r, STEP_TIMEOUT_MS, NULL, what, err, errlen);
        l->end(r);
        return rc;
}

int cfs_unpack(const struct cfs_link *l, const char *path, char *err, size_t errlen)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                int rc = -errno;
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                return rc;
        }
        int rc = upload(l, fd, err, errlen);
        close(fd);
        return rc < 0 ? rc : run_tool(l, "unpack", err, errlen);
}

/* --- the CLI's connection --------------------------------------------------- */

/* A request of the CLI's connection: its id (one request at a time). */
struct cvc_req {
        struct cvc *c;
        uint32_t id;
};

static int cvc_begin(void *ud, uint16_t type, struct cv_buf *body, void **req)
{
        static struct cvc_req r; /* one at a time: the link's contract */
        r.c = ud;
        r.id = cvc_new_id(r.c);
        *req = &r;
        return body->err ? body->err
                         : cvc_send(r.c, type, r.id, cv_buf_head(body), cv_buf_pending(body));
}

static int cvc_more(void *req, uint16_t type, struct cv_buf *body)
{
        struct cvc_req *r = req;
        return body->err ? body->err
                         : cvc_send(r->c, type, r->id, cv_buf_head(body), cv_buf_pending(body));
}

static int cvc_next(void *req, int timeout_ms, struct cvc_event *ev)
{
        struct cvc_req *r = req;
        for (;;) {
                int rc = cvc_next_event(r->c, timeout_ms, ev);
                if (rc <= 0 || ev->id == r->id)
                        return rc;
                cvc_event_free(ev); /* another request's (none is in flight) */
        }
}

static void cvc_end(void *req)
{
        (void)req;
}

void cfs_link_cvc(struct cfs_link *l, struct cvc *c)
{
        *l = (struct cfs_link){
            .ud = c, .begin = cvc_begin, .more = cvc_more, .next = cvc_next, .end = cvc_end};
}
