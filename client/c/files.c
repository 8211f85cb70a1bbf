/* libcellvm: the files and commands services (docs/PROTOCOL.md sections 9-10)
 * as the CLI uses them: put, get, ls, sh. */
#include "cellvm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"

/* Upload pieces: the spec asks for about 1 MiB per FILE_DATA. */
#define PUT_CHUNK (1u << 20)

static int send_buf(struct cvc *c, uint16_t type, uint32_t id, struct cv_buf *b)
{
        if (b->err)
                return cvc_fail(c, b->err, "encode %s: %s", cv_msg_type_name(type),
                                strerror(-b->err));
        return cvc_send(c, type, id, cv_buf_head(b), cv_buf_pending(b));
}

/* A request whose body is {key: value}. */
static int send_path_request(struct cvc *c, uint16_t type, uint32_t id, const char *key,
                             const char *value)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, key);
        cv_enc_cstr(&b, value);
        int rc = send_buf(c, type, id, &b);
        cv_buf_free(&b);
        return rc;
}

/*
 * Waits for the next message of request `id`, skipping others. Returns 1 with
 * `*ev` (non-terminal), 0 when the request ended with OK (`*ev` holds it), or a
 * negative errno (-EREMOTEIO for an agent ERROR).
 */
static int next_of(struct cvc *c, uint32_t id, struct cvc_event *ev)
{
        for (;;) {
                int rc = cvc_next_event(c, -1, ev);
                if (rc < 0)
                        return rc;
                if (rc == 0)
                        continue;
                if (ev->id != id) {
                        cvc_event_free(ev);
                        continue;
                }
                if (ev->type == CV_MSG_ERROR) {
                        rc = cvc_remote_error(c, ev);
                        cvc_event_free(ev);
                        return rc;
                }
                return ev->type == CV_MSG_OK ? 0 : 1;
        }
}

/* Reads, without blocking, what the agent already said about upload `id`: a
 * missing directory ends it at once, and after the last piece the OK may come
 * before we look. Returns 1 once the upload ended with OK, 0 while it goes on,
 * or the error. */
static int upload_status(struct cvc *c, uint32_t id)
{
        struct cvc_event ev;
        int rc;
        while ((rc = cvc_next_event(c, 0, &ev)) == 1) {
                bool ours = ev.id == id;
                if (ours && ev.type == CV_MSG_ERROR)
                        rc = cvc_remote_error(c, &ev);
                else if (ours && ev.type == CV_MSG_OK)
                        rc = 1;
                cvc_event_free(&ev);
                if (rc != 1 || ours)
                        return rc;
        }
        return rc < 0 ? rc : 0;
}

int cvc_put(struct cvc *c, const char *local, const char *remote)
{
        int fd = open(local, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return cvc_fail(c, -errno, "open %s: %s", local, strerror(errno));
        uint8_t *chunk = malloc(PUT_CHUNK);
        if (!chunk) {
                close(fd);
                return cvc_fail(c, -ENOMEM, "out of memory");
        }
        uint32_t id = cvc_new_id(c);
        int rc = send_path_request(c, CV_MSG_FILE_WRITE, id, "path", remote);
        struct cv_buf b;
        cv_buf_init(&b);
        bool ended = false;
        while (rc == 0 && !ended) {
                ssize_t n = read(fd, chunk, PUT_CHUNK);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        rc = cvc_fail(c, -errno, "read %s: %s", local, strerror(errno));
                        break; /* the agent drops the partial upload when we disconnect */
                }
                cv_buf_reset(&b);
                cv_enc_map(&b, 2);
                cv_enc_cstr(&b, "data");
                cv_enc_bytes(&b, chunk, (size_t)n);
                cv_enc_cstr(&b, "eof");
                cv_enc_bool(&b, n == 0);
                rc = send_buf(c, CV_MSG_FILE_DATA, id, &b);
                if (rc == 0)
                        rc = upload_status(c, id);
                ended = rc == 1 || n == 0;
        }
        cv_buf_free(&b);
        free(chunk);
        close(fd);
        if (rc != 0)
                return rc < 0 ? rc : 0;
        struct cvc_event ev;
        while ((rc = next_of(c, id, &ev)) == 1)
                cvc_event_free(&ev);
        if (rc == 0)
                cvc_event_free(&ev);
        return rc;
}

/* Appends one FILE_CHUNK's data to the download's temporary file. */
static int write_chunk(struct cvc *c, int fd, const char *path, const struct cvc_event *ev)
{
        const uint8_t *data;
        size_t len;
        if (ev->type != CV_MSG_FILE_CHUNK || cv_map_get_bytes(ev->root, "data", &data, &len) < 0)
                return cvc_fail(c, -EPROTO, "unexpected %s during a download",
                                cv_msg_type_name(ev->type));
        while (len > 0) {
                ssize_t n = write(fd, data, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return cvc_fail(c, -errno, "write %s: %s", path, strerror(errno));
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

int cvc_get(struct cvc *c, const char *remote, const char *local)
{
        char tmp[PATH_MAX];
        if (snprintf(tmp, sizeof(tmp), "%s.cellvm-partial", local) >= (int)sizeof(tmp))
                return cvc_fail(c, -ENAMETOOLONG, "path too long: %s", local);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return cvc_fail(c, -errno, "create %s: %s", tmp, strerror(errno));
        uint32_t id = cvc_new_id(c);
        int rc = send_path_request(c, CV_MSG_FILE_READ, id, "path", remote);
        bool done = false;
        while (rc == 0 && !done) {
                struct cvc_event ev;
                rc = next_of(c, id, &ev);
                if (rc < 0)
                        break;
                done = rc == 0; /* OK: the whole file came */
                rc = done ? 0 : write_chunk(c, fd, tmp, &ev);
                cvc_event_free(&ev);
        }
        if (close(fd) < 0 && rc == 0)
                rc = cvc_fail(c, -errno, "close %s: %s", tmp, strerror(errno));
        if (rc == 0 && rename(tmp, local) < 0)
                rc = cvc_fail(c, -errno, "rename %s to %s: %s", tmp, local, strerror(errno));
        if (rc < 0)
                unlink(tmp);
        return rc;
}

static void print_entry(FILE *out, const cbor_item_t *e)
{
        const char *perm = "?", *owner = "?", *group = "?", *name = "?", *type = "";
        size_t perm_len = 1, owner_len = 1, group_len = 1, name_len = 1, type_len = 0;
        uint64_t size = 0, mtime = 0;
        (void)cv_map_get_str(e, "permissions", &perm, &perm_len);
        (void)cv_map_get_str(e, "owner", &owner, &owner_len);
        (void)cv_map_get_str(e, "group", &group, &group_len);
        (void)cv_map_get_str(e, "path", &name, &name_len);
        (void)cv_map_get_str(e, "type", &type, &type_len);
        (void)cv_map_get_uint(e, "size", &size);
        (void)cv_map_get_uint(e, "modified_time", &mtime);
        char when[32] = "?";
        time_t secs = (time_t)(mtime / 1000000000u);
        struct tm tm;
        if (gmtime_r(&secs, &tm))
                strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
        bool dir = type_len == 3 && memcmp(type, "dir", 3) == 0;
        fprintf(out, "%.*s %-8.*s %-8.*s %10" PRIu64 " %s %.*s%s\n", (int)perm_len, perm,
                (int)owner_len, owner, (int)group_len, group, size, when, (int)name_len, name,
                dir ? "/" : "");
}

int cvc_ls(struct cvc *c, const char *remote, FILE *out)
{
        uint32_t id = cvc_new_id(c);
        int rc = send_path_request(c, CV_MSG_FILE_LIST, id, "path", remote);
        if (rc < 0)
                return rc;
        struct cvc_event ev;
        while ((rc = next_of(c, id, &ev)) == 1)
                cvc_event_free(&ev);
        if (rc < 0)
                return rc;
        cbor_item_t *entries;
        rc = cv_map_get_array(ev.root, "entries", &entries);
        if (rc < 0) {
                cvc_event_free(&ev);
                return cvc_fail(c, -EPROTO, "FILE_LIST reply without entries");
        }
        cbor_item_t **items = cbor_array_handle(entries);
        for (size_t i = 0; i < cbor_array_size(entries); i++)
                if (cbor_isa_map(items[i]))
                        print_entry(out, items[i]);
        cvc_event_free(&ev);
        return 0;
}

/* Signal numbers for Go's wording ("signal: killed") that E2B's agent uses. */
static int signal_number(const char *error, size_t len)
{
        static const struct {
                const char *name;
                int num;
        } names[] = {{"signal: hangup", 1},       {"signal: interrupt", 2},
                     {"signal: quit", 3},         {"signal: aborted", 6},
                     {"signal: killed", 9},       {"signal: segmentation fault", 11},
                     {"signal: broken pipe", 13}, {"signal: terminated", 15}};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strlen(names[i].name) == len && memcmp(names[i].name, error, len) == 0)
                        return names[i].num;
        return 0;
}

int cvc_sh(struct cvc *c, const char *cmd, uint64_t timeout_ms, int *exit_code)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, timeout_ms ? 2 : 1);
        cv_enc_cstr(&b, "cmd");
        cv_enc_cstr(&b, cmd);
        if (timeout_ms) {
                cv_enc_cstr(&b, "timeout_ms");
                cv_enc_uint(&b, timeout_ms);
        }
        uint32_t id = cvc_new_id(c);
        int rc = send_buf(c, CV_MSG_CMD_START, id, &b);
        cv_buf_free(&b);
        if (rc < 0)
                return rc;
        struct cvc_event ev;
        while ((rc = next_of(c, id, &ev)) == 1) {
                const char *stream;
                const uint8_t *data;
                size_t slen, len;
                if (ev.type == CV_MSG_CMD_OUTPUT &&
                    cv_map_get_str(ev.root, "stream", &stream, &slen) == 0 &&
                    cv_map_get_bytes(ev.root, "data", &data, &len) == 0) {
                        FILE *f = slen == 6 && memcmp(stream, "stderr", 6) == 0 ? stderr : stdout;
                        fwrite(data, 1, len, f);
                        fflush(f);
                }
                cvc_event_free(&ev);
        }
        if (rc < 0)
                return rc;
        int64_t code = 0;
        const char *error;
        size_t elen;
        (void)cv_map_get_int(ev.root, "exit_code", &code);
        if (code < 0 && cv_map_get_str(ev.root, "error", &error, &elen) == 0) {
                int sig = signal_number(error, elen);
                fprintf(stderr, "cellvm: command ended by %.*s\n", (int)elen, error);
                code = sig ? 128 + sig : 255;
        }
        *exit_code = code < 0 || code > 255 ? 255 : (int)code;
        cvc_event_free(&ev);
        return 0;
}
