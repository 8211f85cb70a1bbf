/* A small QMP client: see qmp.h. */
#include "qmp.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mono_clock.h"

/* --- the JSON scanner ------------------------------------------------------- */

static const char *skip_ws(const char *p, const char *end)
{
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
                p++;
        return p;
}

/* Past a string starting at p ('"'), or NULL if it is not a valid one. */
static const char *skip_string(const char *p, const char *end)
{
        if (p >= end || *p != '"')
                return NULL;
        for (p++; p < end; p++) {
                unsigned char c = (unsigned char)*p;
                if (c == '"')
                        return p + 1;
                if (c < 0x20)
                        return NULL;
                if (c != '\\')
                        continue;
                if (++p >= end)
                        return NULL;
                if (*p == 'u') {
                        for (int i = 0; i < 4; i++)
                                if (++p >= end || !strchr("0123456789abcdefABCDEF", *p) || !*p)
                                        return NULL;
                } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
                        return NULL;
                }
        }
        return NULL;
}

static const char *skip_digits(const char *p, const char *end)
{
        const char *s = p;
        while (p < end && *p >= '0' && *p <= '9')
                p++;
        return p == s ? NULL : p;
}

static const char *skip_number(const char *p, const char *end)
{
        if (p < end && *p == '-')
                p++;
        if (!(p = skip_digits(p, end)))
                return NULL;
        if (p < end && *p == '.' && !(p = skip_digits(p + 1, end)))
                return NULL;
        if (p < end && (*p == 'e' || *p == 'E')) {
                p++;
                if (p < end && (*p == '+' || *p == '-'))
                        p++;
                if (!(p = skip_digits(p, end)))
                        return NULL;
        }
        return p;
}

static const char *skip_value(const char *p, const char *end, int depth);

/* Past an object or array starting at p, each member checked. */
static const char *skip_container(const char *p, const char *end, int depth)
{
        char close = *p == '{' ? '}' : ']';
        bool object = *p == '{';
        if (depth >= CQMP_MAX_DEPTH)
                return NULL;
        p = skip_ws(p + 1, end);
        if (p < end && *p == close)
                return p + 1;
        for (;;) {
                if (object) {
                        if (!(p = skip_string(p, end)))
                                return NULL;
                        p = skip_ws(p, end);
                        if (p >= end || *p != ':')
                                return NULL;
                        p = skip_ws(p + 1, end);
                }
                if (!(p = skip_value(p, end, depth + 1)))
                        return NULL;
                p = skip_ws(p, end);
                if (p < end && *p == close)
                        return p + 1;
                if (p >= end || *p != ',')
                        return NULL;
                p = skip_ws(p + 1, end);
        }
}

static const char *skip_value(const char *p, const char *end, int depth)
{
        if (p >= end)
                return NULL;
        switch (*p) {
        case '{':
        case '[':
                return skip_container(p, end, depth);
        case '"':
                return skip_string(p, end);
        case 't':
                return end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
        case 'f':
                return end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
        case 'n':
                return end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
        default:
                return skip_number(p, end);
        }
}

static unsigned hex4(const char *p)
{
        unsigned v = 0;
        for (int i = 0; i < 4; i++) {
                char c = p[i];
                v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        return v;
}

/* Appends code point `cp` as UTF-8; false when it does not fit. */
static bool put_utf8(char *out, size_t outlen, size_t *k, unsigned cp)
{
        char b[4];
        size_t n;
        if (cp < 0x80)
                b[0] = (char)cp, n = 1;
        else if (cp < 0x800)
                b[0] = (char)(0xc0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
        else if (cp < 0x10000)
                b[0] = (char)(0xe0 | cp >> 12), b[1] = (char)(0x80 | (cp >> 6 & 0x3f)),
                b[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
        else
                b[0] = (char)(0xf0 | cp >> 18), b[1] = (char)(0x80 | (cp >> 12 & 0x3f)),
                b[2] = (char)(0x80 | (cp >> 6 & 0x3f)), b[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
        if (*k + n >= outlen)
                return false;
        memcpy(out + *k, b, n);
        *k += n;
        return true;
}

int cqmp_json_string(const char *val, size_t len, char *out, size_t outlen)
{
        const char *end = val + len;
        if (outlen == 0 || skip_string(val, end) != end)
                return -EPROTO;
        size_t k = 0;
        for (const char *p = val + 1; p < end - 1; p++) {
                unsigned cp = (unsigned char)*p;
                if (*p == '\\') {
                        p++;
                        switch (*p) {
                        case 'b':
                                cp = '\b';
                                break;
                        case 'f':
                                cp = '\f';
                                break;
                        case 'n':
                                cp = '\n';
                                break;
                        case 'r':
                                cp = '\r';
                                break;
                        case 't':
                                cp = '\t';
                                break;
                        case 'u':
                                cp = hex4(p + 1);
                                p += 4;
                                if (cp >= 0xd800 && cp < 0xdc00 && end - 1 - p > 6 &&
                                    p[1] == '\\' && p[2] == 'u' && hex4(p + 3) >= 0xdc00 &&
                                    hex4(p + 3) < 0xe000) {
                                        cp = 0x10000 + ((cp - 0xd800) << 10) +
                                             (hex4(p + 3) - 0xdc00);
                                        p += 6;
                                } else if (cp >= 0xd800 && cp < 0xe000) {
                                        cp = 0xfffd; /* a lone surrogate */
                                }
                                break;
                        default: /* " \ / */
                                cp = (unsigned char)*p;
                        }
                        if (!put_utf8(out, outlen, &k, cp)) {
                                out[k] = '\0';
                                return -E2BIG;
                        }
                        continue;
                }
                if (k + 1 >= outlen) {
                        out[k] = '\0';
                        return -E2BIG;
                }
                out[k++] = (char)cp; /* raw bytes (UTF-8 from QEMU) are copied as they are */
        }
        out[k] = '\0';
        return 0;
}

int cqmp_json_get(const char *obj, size_t len, const char *key, const char **val, size_t *vlen)
{
        const char *end = obj + len;
        const char *p = skip_ws(obj, end);
        if (p >= end || *p != '{' || skip_value(p, end, 0) == NULL)
                return -EPROTO;
        p = skip_ws(p + 1, end);
        if (p < end && *p == '}')
                return -ENOENT;
        size_t klen = strlen(key);
        for (;;) {
                const char *ks = p;
                p = skip_string(p, end); /* the object was checked whole above */
                char name[128];
                bool match = cqmp_json_string(ks, (size_t)(p - ks), name, sizeof(name)) == 0 &&
                             strlen(name) == klen && memcmp(name, key, klen) == 0;
                p = skip_ws(skip_ws(p, end) + 1, end); /* past ':' */
                const char *vs = p;
                p = skip_value(p, end, 1);
                if (match) {
                        *val = vs;
                        *vlen = (size_t)(p - vs);
                        return 0;
                }
                p = skip_ws(p, end);
                if (*p == '}')
                        return -ENOENT;
                p = skip_ws(p + 1, end); /* past ',' */
        }
}

int cqmp_parse_reply(const char *line, size_t len, struct cqmp_reply *r)
{
        memset(r, 0, sizeof(*r));
        const char *end = line + len;
        const char *p = skip_ws(line, end);
        if (p >= end || *p != '{')
                return -EPROTO;
        const char *after = skip_value(p, end, 0);
        if (!after || skip_ws(after, end) != end)
                return -EPROTO;
        const char *v;
        size_t vl;
        if (cqmp_json_get(line, len, "return", &v, &vl) == 0) {
                r->kind = CQMP_RETURN;
        } else if (cqmp_json_get(line, len, "error", &v, &vl) == 0) {
                r->kind = CQMP_ERROR;
                const char *s;
                size_t sl;
                if (cqmp_json_get(v, vl, "class", &s, &sl) == 0)
                        (void)cqmp_json_string(s, sl, r->error_class, sizeof(r->error_class));
                if (cqmp_json_get(v, vl, "desc", &s, &sl) == 0)
                        (void)cqmp_json_string(s, sl, r->desc, sizeof(r->desc));
                if (!r->error_class[0])
                        snprintf(r->error_class, sizeof(r->error_class), "Error");
        } else if (cqmp_json_get(line, len, "event", &v, &vl) == 0) {
                r->kind = CQMP_EVENT;
        } else if (cqmp_json_get(line, len, "QMP", &v, &vl) == 0) {
                r->kind = CQMP_GREETING;
        } else {
                return -EPROTO;
        }
        r->value = v;
        r->value_len = vl;
        return 0;
}

/* --- the connection --------------------------------------------------------- */

static int failf(struct cqmp *q, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int failf(struct cqmp *q, int rc, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(q->err, sizeof(q->err), fmt, ap);
        va_end(ap);
        return rc;
}

/* The next line into q->line (without "\r\n"); its length or a negative errno. */
static int read_line(struct cqmp *q, int64_t deadline, size_t *len)
{
        for (;;) {
                char *nl = memchr(q->buf, '\n', q->len);
                if (nl) {
                        size_t n = (size_t)(nl - q->buf);
                        memcpy(q->line, q->buf, n);
                        q->line[n] = '\0';
                        if (n && q->line[n - 1] == '\r')
                                q->line[--n] = '\0';
                        q->len -= (size_t)(nl + 1 - q->buf);
                        memmove(q->buf, nl + 1, q->len);
                        *len = n;
                        return 0;
                }
                if (q->len >= CQMP_MAX_LINE)
                        return failf(q, -EPROTO, "QMP: a reply line over %d bytes", CQMP_MAX_LINE);
                int64_t left = deadline - mono_ms();
                if (left <= 0)
                        return failf(q, -ETIMEDOUT, "QMP: no answer in time");
                struct pollfd pfd = {.fd = q->fd, .events = POLLIN};
                int rc = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
                if (rc < 0 && errno == EINTR)
                        continue;
                if (rc < 0)
                        return failf(q, -errno, "QMP: poll: %s", strerror(errno));
                if (rc == 0)
                        continue;
                ssize_t n = read(q->fd, q->buf + q->len, CQMP_MAX_LINE - q->len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return failf(q, -errno, "QMP: %s", strerror(errno));
                if (n == 0)
                        return failf(q, -ECONNRESET, "QMP: QEMU closed the connection");
                q->len += (size_t)n;
        }
}

/* The next reply that is not an event. */
static int read_reply(struct cqmp *q, int64_t deadline, struct cqmp_reply *r)
{
        for (;;) {
                size_t n;
                int rc = read_line(q, deadline, &n);
                if (rc < 0)
                        return rc;
                if (cqmp_parse_reply(q->line, n, r) < 0)
                        return failf(q, -EPROTO, "QMP: not a QMP reply: %.200s", q->line);
                if (r->kind != CQMP_EVENT)
                        return 0;
        }
}

static int send_all(struct cqmp *q, const char *msg, size_t len, int pass_fd)
{
        size_t off = 0;
        if (pass_fd >= 0) {
                char cbuf[CMSG_SPACE(sizeof(int))] = {0};
                struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
                struct msghdr mh = {.msg_iov = &iov,
                                    .msg_iovlen = 1,
                                    .msg_control = cbuf,
                                    .msg_controllen = sizeof(cbuf)};
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
                ssize_t n;
                while ((n = sendmsg(q->fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
                        ;
                if (n < 0)
                        return -errno;
                off = (size_t)n; /* the fd went with the first byte */
        }
        while (off < len) {
                ssize_t n = send(q->fd, msg + off, len - off, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                off += (size_t)n;
        }
        return 0;
}

int cqmp_execute(struct cqmp *q, const char *command, const char *args_json, int pass_fd,
                 int timeout_ms, struct cqmp_reply *reply)
{
        char msg[1024];
        int n = args_json ? snprintf(msg, sizeof(msg), "{\"execute\": \"%s\", \"arguments\": %s}\n",
                                     command, args_json)
                          : snprintf(msg, sizeof(msg), "{\"execute\": \"%s\"}\n", command);
        if (n < 0 || (size_t)n >= sizeof(msg))
                return failf(q, -E2BIG, "QMP %s: command too long", command);
        int64_t deadline = mono_ms() + timeout_ms;
        int rc = send_all(q, msg, (size_t)n, pass_fd);
        if (rc < 0)
                return failf(q, rc, "QMP %s: %s", command, strerror(-rc));
        struct cqmp_reply r;
        for (;;) {
                rc = read_reply(q, deadline, &r);
                if (rc < 0) {
                        char why[sizeof(q->err)];
                        memcpy(why, q->err, sizeof(why));
                        return failf(q, rc, "QMP %s: %s", command,
                                     why + (strncmp(why, "QMP: ", 5) ? 0 : 5));
                }
                if (r.kind == CQMP_ERROR)
                        return failf(q, -EREMOTEIO, "QMP %s: %s: %s", command, r.error_class,
                                     r.desc);
                if (r.kind == CQMP_RETURN)
                        break;
                /* a greeting here is not an answer: read on */
        }
        if (reply)
                *reply = r;
        return 0;
}

int cqmp_connect(struct cqmp *q, const char *path, int timeout_ms, int (*alive)(void *), void *ud)
{
        q->fd = -1;
        q->len = 0;
        q->err[0] = '\0';
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof(sa.sun_path))
                return failf(q, -ENAMETOOLONG, "QMP socket path too long: %s", path);
        strcpy(sa.sun_path, path);
        int64_t deadline = mono_ms() + timeout_ms;
        for (;;) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return failf(q, -errno, "socket(AF_UNIX): %s", strerror(errno));
                if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
                        q->fd = fd;
                        break;
                }
                int e = errno;
                close(fd);
                if (e != ENOENT && e != ECONNREFUSED && e != EINTR)
                        return failf(q, -e, "QMP socket %s: %s", path, strerror(e));
                if (alive && !alive(ud))
                        return failf(q, -ECHILD, "QMP socket %s: QEMU exited", path);
                if (mono_ms() >= deadline)
                        return failf(q, -ETIMEDOUT, "QMP socket %s: %s", path, strerror(e));
                struct timespec ts = {.tv_nsec = 2000000};
                nanosleep(&ts, NULL);
        }
        struct cqmp_reply r;
        size_t n;
        int rc = read_line(q, deadline, &n);
        if (rc == 0 && (cqmp_parse_reply(q->line, n, &r) < 0 || r.kind != CQMP_GREETING))
                rc = failf(q, -EPROTO, "QMP socket %s: no greeting (%.200s)", path, q->line);
        int64_t left = deadline - mono_ms();
        if (rc == 0)
                rc =
                    cqmp_execute(q, "qmp_capabilities", NULL, -1, left > 50 ? (int)left : 50, NULL);
        if (rc < 0)
                cqmp_close(q);
        return rc;
}

int cqmp_wait_migration(struct cqmp *q, int timeout_ms)
{
        int64_t deadline = mono_ms() + timeout_ms;
        char status[32] = "";
        for (;;) {
                int64_t left = deadline - mono_ms();
                struct cqmp_reply r;
                int rc = cqmp_execute(q, "query-migrate", NULL, -1, left > 50 ? (int)left : 50, &r);
                if (rc < 0)
                        return rc;
                const char *v;
                size_t vl;
                status[0] = '\0';
                if (cqmp_json_get(r.value, r.value_len, "status", &v, &vl) == 0)
                        (void)cqmp_json_string(v, vl, status, sizeof(status));
                if (strcmp(status, "completed") == 0)
                        return 0;
                if (strcmp(status, "failed") == 0 || strcmp(status, "cancelled") == 0) {
                        char desc[400] = "no reason given";
                        if (cqmp_json_get(r.value, r.value_len, "error-desc", &v, &vl) == 0)
                                (void)cqmp_json_string(v, vl, desc, sizeof(desc));
                        return failf(q, -EIO, "migration %s: %s", status, desc);
                }
                if (mono_ms() >= deadline)
                        return failf(q, -ETIMEDOUT, "migration not completed in %d ms (status %s)",
                                     timeout_ms, status[0] ? status : "none");
                struct timespec ts = {.tv_nsec = 2000000};
                nanosleep(&ts, NULL);
        }
}

void cqmp_close(struct cqmp *q)
{
        if (q->fd >= 0)
                close(q->fd);
        q->fd = -1;
}
