/* The guest's HTTP/1.1 responses: heads and bodies (serve_http1.h). */
#include "serve_http1.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER };

size_t h1_head_end(const char *p, size_t n)
{
        for (size_t i = 0; i + 1 < n; i++) {
                if (p[i] == '\n' && p[i + 1] == '\n')
                        return i + 2;
                if (i + 3 < n && memcmp(p + i, "\r\n\r\n", 4) == 0)
                        return i + 4;
        }
        return 0;
}

static bool dropped_header(const char *name, size_t n)
{
        static const char *const names[] = {
            "Connection", "Keep-Alive", "Proxy-Connection",  "TE",
            "Trailer",    "Upgrade",    "Transfer-Encoding", "Content-Length",
        };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strlen(names[i]) == n && strncasecmp(name, names[i], n) == 0)
                        return true;
        return false;
}

static void trim(char **s, size_t *n)
{
        while (*n && (**s == ' ' || **s == '\t'))
                (*s)++, (*n)--;
        while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
                (*n)--;
}

/* A Content-Length value: digits only, below 2^63. */
static int parse_length(const char *v, size_t n, uint64_t *out)
{
        if (n == 0 || n > 18)
                return -EINVAL;
        uint64_t x = 0;
        for (size_t i = 0; i < n; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return -EINVAL;
                x = x * 10 + (uint64_t)(v[i] - '0');
        }
        *out = x;
        return 0;
}

int h1_parse_head(char *p, size_t n, bool head_request, unsigned *status, struct h1_body *b,
                  h1_header_fn header, void *ud)
{
        /* "HTTP/1.x SSS reason" */
        if (n < 12 || strncmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ')
                return -EINVAL;
        unsigned st = 0;
        for (int i = 9; i < 12; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return -EINVAL;
                st = st * 10 + (unsigned)(p[i] - '0');
        }
        if (st < 100 || st > 599)
                return -EINVAL;
        char *eol = memchr(p, '\n', n);
        if (!eol)
                return -EINVAL;
        bool chunked = false, has_length = false;
        uint64_t length = 0;
        char *end = p + n;
        for (char *line = eol + 1; line < end;) {
                char *next = memchr(line, '\n', (size_t)(end - line));
                if (!next)
                        return -EINVAL;
                size_t len = (size_t)(next - line);
                if (len && line[len - 1] == '\r')
                        len--;
                if (len == 0)
                        break; /* the blank line */
                char *colon = memchr(line, ':', len);
                if (!colon || colon == line)
                        return -EINVAL;
                char *name = line, *value = colon + 1;
                size_t name_len = (size_t)(colon - line), value_len = len - name_len - 1;
                for (size_t i = 0; i < name_len; i++)
                        if (name[i] <= ' ' || name[i] == 0x7f)
                                return -EINVAL; /* no spaces, controls or NULs in a name */
                trim(&value, &value_len);
                if (memchr(value, '\0', value_len) || memchr(value, '\r', value_len))
                        return -EINVAL;
                if (name_len == 17 && strncasecmp(name, "Transfer-Encoding", 17) == 0) {
                        /* Chunked when it is the last coding (RFC 9112 6.3). */
                        chunked =
                            value_len >= 7 && strncasecmp(value + value_len - 7, "chunked", 7) == 0;
                } else if (name_len == 14 && strncasecmp(name, "Content-Length", 14) == 0) {
                        uint64_t v;
                        if (parse_length(value, value_len, &v) < 0 || (has_length && v != length))
                                return -EINVAL;
                        has_length = true;
                        length = v;
                }
                if (header && !dropped_header(name, name_len)) {
                        name[name_len] = '\0';
                        value[value_len] = '\0';
                        if (header(ud, name, value) != 0)
                                return -ECANCELED;
                }
                line = next + 1;
        }
        *status = st;
        memset(b, 0, sizeof(*b));
        if (head_request || st < 200 || st == 204 || st == 304)
                b->framing = H1_NONE;
        else if (chunked)
                b->framing = H1_CHUNKED;
        else if (has_length)
                b->framing = H1_LENGTH, b->left = length;
        else
                b->framing = H1_TO_EOF;
        b->done = b->framing == H1_NONE || (b->framing == H1_LENGTH && length == 0);
        b->announced = has_length;
        b->announced_length = length;
        return 0;
}

int h1_header_value(const char *p, size_t n, const char *name, char *out, size_t outlen)
{
        size_t nl = strlen(name);
        const char *end = p + n, *line = memchr(p, '\n', n);
        while (line && ++line < end) {
                const char *next = memchr(line, '\n', (size_t)(end - line));
                size_t len = next ? (size_t)(next - line) : (size_t)(end - line);
                if (len > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
                        char *v = (char *)line + nl + 1;
                        size_t vl = len - nl - 1;
                        if (vl && v[vl - 1] == '\r')
                                vl--;
                        trim(&v, &vl);
                        if (memchr(v, '\0', vl) || memchr(v, '\r', vl))
                                return -EINVAL;
                        if (vl >= outlen)
                                return -ENAMETOOLONG;
                        memcpy(out, v, vl);
                        out[vl] = '\0';
                        return 0;
                }
                line = next;
        }
        return -ENOENT;
}

/* Reads one line of the chunked framing into b->line; *whole once it ended. */
static int take_line(struct h1_body *b, const uint8_t **p, const uint8_t *end, bool *whole)
{
        *whole = false;
        while (*p < end) {
                char c = (char)*(*p)++;
                if (c == '\n') {
                        if (b->line_len && b->line[b->line_len - 1] == '\r')
                                b->line_len--;
                        b->line[b->line_len] = '\0';
                        *whole = true;
                        return 0;
                }
                if (b->line_len + 1 >= sizeof(b->line))
                        return -EINVAL; /* a size line (with extensions) or trailer too long */
                b->line[b->line_len++] = c;
        }
        return 0;
}

/* A chunk-size line: hex digits, then nothing or extensions. */
static int chunk_size(const char *line, uint64_t *out)
{
        uint64_t x = 0;
        size_t i = 0;
        for (; line[i]; i++) {
                char c = line[i];
                int d = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
                if (d < 0)
                        break;
                if (i >= 15)
                        return -EINVAL; /* over 2^60 */
                x = x * 16 + (uint64_t)d;
        }
        if (i == 0 || (line[i] && line[i] != ';' && line[i] != ' ' && line[i] != '\t'))
                return -EINVAL;
        *out = x;
        return 0;
}

static int emit(h1_out_fn out, void *ud, const uint8_t *p, size_t n)
{
        return n == 0 || out(ud, p, n) == 0 ? 0 : -ECANCELED;
}

int h1_body_feed(struct h1_body *b, const uint8_t *p, size_t n, h1_out_fn out, void *ud)
{
        const uint8_t *end = p + n;
        while (p < end && !b->done) {
                size_t avail = (size_t)(end - p);
                bool whole;
                int rc = 0;
                if (b->framing == H1_NONE) {
                        b->done = true;
                } else if (b->framing == H1_TO_EOF) {
                        return emit(out, ud, p, avail);
                } else if (b->framing == H1_LENGTH ||
                           (b->framing == H1_CHUNKED && b->chunk_state == CH_DATA)) {
                        size_t k = avail < b->left ? avail : (size_t)b->left;
                        if ((rc = emit(out, ud, p, k)) < 0)
                                return rc;
                        p += k;
                        b->left -= k;
                        if (b->left == 0) {
                                if (b->framing == H1_LENGTH)
                                        b->done = true;
                                else
                                        b->chunk_state = CH_DATA_END;
                        }
                } else if ((rc = take_line(b, &p, end, &whole)) < 0) {
                        return rc;
                } else if (whole) {
                        if (b->chunk_state == CH_SIZE) {
                                uint64_t size;
                                if (chunk_size(b->line, &size) < 0)
                                        return -EINVAL;
                                b->left = size;
                                b->chunk_state = size ? CH_DATA : CH_TRAILER;
                        } else if (b->chunk_state == CH_DATA_END) {
                                if (b->line_len)
                                        return -EINVAL; /* chunk data longer than its size */
                                b->chunk_state = CH_SIZE;
                        } else if (b->line_len == 0) { /* CH_TRAILER: the blank line */
                                b->done = true;
                        }
                        b->line_len = 0;
                }
        }
        return 0;
}
