/* A streaming multipart/form-data reader (serve_multipart.h). */
#include "serve_multipart.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { PREAMBLE, AFTER_DELIM, HEADERS, BODY, EPILOGUE };

/* The body is taken in slices of this much, so `buf` stays bounded. */
#define MP_SLICE 32768
/* Transport padding (blanks) after a delimiter: at most this much. */
#define MP_PADDING_MAX 1024

static int fail(struct mp *m, const char *why)
{
        snprintf(m->why, sizeof(m->why), "multipart body: %s", why);
        return -EINVAL;
}

/* The parameter `name` of a header value's list (`; k=v; k2="quoted"`), read
 * as Go's mime.ParseMediaType reads it (envd's parser): one parameter after
 * another, so a quoted value's text is never taken for a parameter; keys
 * compared without case; in a quoted value a backslash escapes a special
 * character only (else it is kept, as in "C:\dir\f.txt"). 1 with `out` set,
 * 0 when absent, -EINVAL when the list is malformed, -ENAMETOOLONG. */
static int param(const char *v, const char *name, char *out, size_t outlen)
{
        static const char tspecials[] = "()<>@,;:\\\"/[]?=";
        size_t nl = strlen(name);
        int found = 0;
        const char *p = v;
        for (;;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p)
                        return found;
                if (*p != ';')
                        return -EINVAL;
                p++;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p)
                        return found; /* a trailing ';' */
                const char *k = p;
                while (*p && *p != '=' && *p != ';' && *p != ' ' && *p != '\t' && *p != '"')
                        p++;
                size_t kl = (size_t)(p - k);
                while (*p == ' ' || *p == '\t')
                        p++;
                if (kl == 0 || *p != '=')
                        return -EINVAL;
                p++;
                while (*p == ' ' || *p == '\t')
                        p++;
                bool match = !found && kl == nl && strncasecmp(k, name, nl) == 0;
                size_t o = 0;
                if (*p == '"') {
                        for (p++; *p != '"'; p++) {
                                if (!*p || *p == '\r' || *p == '\n')
                                        return -EINVAL; /* no closing quote */
                                if (*p == '\\' && p[1] && strchr(tspecials, p[1]))
                                        p++;
                                if (match) {
                                        if (o + 1 >= outlen)
                                                return -ENAMETOOLONG;
                                        out[o++] = *p;
                                }
                        }
                        p++;
                } else {
                        for (; *p && *p != ';' && *p != ' ' && *p != '\t'; p++) {
                                if (*p == '"')
                                        return -EINVAL;
                                if (match) {
                                        if (o + 1 >= outlen)
                                                return -ENAMETOOLONG;
                                        out[o++] = *p;
                                }
                        }
                }
                if (match) {
                        out[o] = '\0';
                        found = 1;
                }
        }
}

int mp_init(struct mp *m, const char *content_type, const struct mp_callbacks *cb)
{
        memset(m, 0, sizeof(*m));
        m->cb = *cb;
        char boundary[MP_BOUNDARY_MAX + 2];
        if (!content_type || strncasecmp(content_type, "multipart/form-data", 19) != 0)
                return fail(m, "Content-Type is not multipart/form-data");
        int rc = param(content_type + 19, "boundary", boundary, sizeof(boundary));
        if (rc == -EINVAL)
                return fail(m, "malformed parameters in Content-Type");
        if (rc <= 0 || !boundary[0] || strlen(boundary) > MP_BOUNDARY_MAX)
                return fail(m, "no boundary of 1 to 70 characters in Content-Type");
        m->dlen = (size_t)snprintf(m->delim, sizeof(m->delim), "\r\n--%s", boundary);
        /* The first delimiter may open the body without a CRLF before it:
         * the buffer starts with one, as if it had. */
        m->buf = malloc(MP_SLICE + sizeof(m->delim) + MP_HEADER_MAX + 8);
        if (!m->buf)
                return -ENOMEM;
        m->cap = MP_SLICE + sizeof(m->delim) + MP_HEADER_MAX + 8;
        memcpy(m->buf, "\r\n", 2);
        m->len = 2;
        return 0;
}

static int part_headers(struct mp *m, char *h)
{
        char name[256] = "", filename[MP_NAME_MAX] = "";
        bool disposition = false;
        for (char *line = h, *next; line && *line; line = next) {
                char *crlf = strstr(line, "\r\n");
                next = crlf ? crlf + 2 : NULL;
                if (crlf)
                        *crlf = '\0';
                if (strncasecmp(line, "Content-Disposition:", 20) != 0)
                        continue;
                const char *v = line + 20;
                while (*v == ' ' || *v == '\t')
                        v++;
                if (strncasecmp(v, "form-data", 9) != 0)
                        return fail(m, "a part's Content-Disposition is not form-data");
                disposition = true;
                if (param(v + 9, "name", name, sizeof(name)) < 0 ||
                    param(v + 9, "filename", filename, sizeof(filename)) < 0)
                        return fail(m, "a part's name or filename is malformed or too long");
        }
        if (!disposition)
                return fail(m, "a part without Content-Disposition");
        if (++m->parts > MP_MAX_PARTS)
                return fail(m, "too many parts");
        return m->cb.begin(m->cb.ud, name, filename);
}

/* Decides on what `buf` holds; leaves in it only what may still be part of
 * a delimiter or of headers not complete yet. */
static int step(struct mp *m, bool final)
{
        for (;;) {
                char *b = m->buf;
                size_t n = m->len, used = 0;
                int rc = 0;
                if (m->state == PREAMBLE || m->state == BODY) {
                        char *d = memmem(b, n, m->delim, m->dlen);
                        size_t upto = d ? (size_t)(d - b) : (n >= m->dlen ? n - (m->dlen - 1) : 0);
                        if (final && !d)
                                upto = n;
                        if (m->state == BODY && upto && (rc = m->cb.data(m->cb.ud, b, upto)) < 0)
                                return rc;
                        used = upto;
                        if (d) {
                                used += m->dlen;
                                if (m->state == BODY && (rc = m->cb.end(m->cb.ud)) < 0)
                                        return rc;
                                m->state = AFTER_DELIM;
                        }
                } else if (m->state == AFTER_DELIM) {
                        /* "--" closes the body; else optional blanks, then CRLF. */
                        if (n < 2)
                                goto more;
                        if (b[0] == '-' && b[1] == '-') {
                                m->state = EPILOGUE;
                                used = 2;
                        } else {
                                size_t i = 0;
                                while (i < n && (b[i] == ' ' || b[i] == '\t'))
                                        i++;
                                /* bounded, so the buffer is, however it is cut */
                                if (i > MP_PADDING_MAX)
                                        return fail(m, "blanks after a delimiter over 1 KiB");
                                if (i + 2 > n)
                                        goto more;
                                if (b[i] != '\r' || b[i + 1] != '\n')
                                        return fail(m, "no CRLF after a delimiter");
                                used = i + 2;
                                m->state = HEADERS;
                        }
                } else if (m->state == HEADERS) {
                        char *e = memmem(b, n, "\r\n\r\n", 4);
                        size_t hl;
                        if (b[0] == '\r' && n >= 2 && b[1] == '\n') {
                                e = b; /* no headers at all */
                                hl = 0;
                                used = 2;
                        } else if (e) {
                                hl = (size_t)(e - b) + 2;
                                used = hl + 2;
                        } else {
                                /* headers of MP_HEADER_MAX bytes and the CRLF
                                 * ending them may still be coming */
                                if (n > MP_HEADER_MAX + 1)
                                        return fail(m, "a part's headers are over 8 KiB");
                                goto more;
                        }
                        if (hl > MP_HEADER_MAX)
                                return fail(m, "a part's headers are over 8 KiB");
                        char hdr[MP_HEADER_MAX + 1];
                        memcpy(hdr, b, hl);
                        hdr[hl] = '\0';
                        if (memchr(hdr, '\0', hl))
                                return fail(m, "a NUL byte in a part's headers");
                        if ((rc = part_headers(m, hdr)) < 0)
                                return rc;
                        m->state = BODY;
                } else { /* EPILOGUE: ignored */
                        used = n;
                }
                memmove(b, b + used, n - used);
                m->len = n - used;
                if (used == 0)
                        goto more;
        }
more:
        return 0;
}

int mp_feed(struct mp *m, const char *p, size_t len)
{
        while (len) {
                size_t room = m->cap - m->len;
                size_t take = len < MP_SLICE ? len : MP_SLICE;
                if (take > room)
                        return fail(m, "internal buffer full");
                memcpy(m->buf + m->len, p, take);
                m->len += take;
                p += take;
                len -= take;
                int rc = step(m, false);
                if (rc < 0)
                        return rc;
        }
        return 0;
}

int mp_finish(struct mp *m)
{
        int rc = step(m, false);
        if (rc < 0)
                return rc;
        if (m->state != EPILOGUE)
                return fail(m,
                            m->parts ? "the closing delimiter is missing" : "no part in the body");
        return 0;
}

void mp_free(struct mp *m)
{
        free(m->buf);
        m->buf = NULL;
}
