/* cellvm mcp: what a tool returns, built from what the guest sent: text
 * kept up to a bound with a marker saying how much was cut, made valid
 * UTF-8 (JSON's strings must be), and base64 images. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "mcp_content.h"
#include "serve_http.h"

int mcp_text_add(struct mcp_text *t, const void *p, size_t n)
{
        size_t room = t->max > t->len ? t->max - t->len : 0;
        size_t take = n < room ? n : room;
        t->cut += n - take;
        if (!take)
                return 0;
        if (t->len + take + 1 > t->cap) {
                size_t cap = t->cap ? t->cap : 4096;
                while (cap < t->len + take + 1)
                        cap *= 2;
                char *b = realloc(t->buf, cap);
                if (!b)
                        return -ENOMEM;
                t->buf = b;
                t->cap = cap;
        }
        memcpy(t->buf + t->len, p, take);
        t->len += take;
        t->buf[t->len] = '\0';
        return 0;
}

void mcp_text_free(struct mcp_text *t)
{
        free(t->buf);
        memset(t, 0, sizeof(*t));
}

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
        size_t len = p[0] < 0x80             ? 1
                     : (p[0] & 0xE0) == 0xC0 ? 2
                     : (p[0] & 0xF0) == 0xE0 ? 3
                     : (p[0] & 0xF8) == 0xF0 ? 4
                                             : 0;
        if (!len || len > n || (len == 2 && p[0] < 0xC2) || (len == 4 && p[0] > 0xF4))
                return 0;
        for (size_t i = 1; i < len; i++)
                if ((p[i] & 0xC0) != 0x80)
                        return 0;
        if (len == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0)))
                return 0; /* overlong, surrogate */
        if (len == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90)))
                return 0;
        return len;
}

/* Whether p[0..n) is the start of a character, the rest cut off by a bound. */
static bool cut_short(const unsigned char *p, size_t n)
{
        if (n >= 4 || p[0] < 0xC2 || p[0] > 0xF4)
                return false;
        size_t want = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : 2;
        for (size_t j = 1; j < n; j++)
                if ((p[j] & 0xC0) != 0x80)
                        return false;
        return n < want;
}

bool mcp_is_utf8(const void *data, size_t n, bool cut)
{
        const unsigned char *p = data;
        for (size_t i = 0; i < n;) {
                size_t l = utf8_seq(p + i, n - i);
                if (!l && cut && cut_short(p + i, n - i))
                        return true;
                if (!l || (l == 1 && p[i] == 0))
                        return false;
                i += l;
        }
        return true;
}

/* In place: terminal colour codes (tracebacks carry them) dropped, bytes
 * that are not valid UTF-8 (or NUL) as '?'. */
static void clean(struct mcp_text *t)
{
        unsigned char *p = (unsigned char *)t->buf;
        size_t w = 0;
        for (size_t i = 0; i < t->len;) {
                if (p[i] == 0x1b && i + 1 < t->len && p[i + 1] == '[') {
                        size_t j = i + 2;
                        while (j < t->len && ((p[j] >= '0' && p[j] <= '9') || p[j] == ';'))
                                j++;
                        if (j < t->len && p[j] >= 0x40 && p[j] <= 0x7e) {
                                i = j + 1;
                                continue;
                        }
                }
                size_t l = utf8_seq(p + i, t->len - i);
                if (!l && t->cut && cut_short(p + i, t->len - i)) {
                        t->cut += t->len - i; /* the bound cut this character: it goes too */
                        break;
                }
                if (!l || (l == 1 && p[i] == 0)) {
                        p[w++] = '?';
                        i++;
                        continue;
                }
                memmove(p + w, p + i, l);
                w += l;
                i += l;
        }
        t->len = w;
        if (t->buf)
                t->buf[w] = '\0';
}

int mcp_add_text(json_t *content, const char *label, struct mcp_text *t)
{
        clean(t);
        char marker[200] = "";
        if (t->cut)
                snprintf(marker, sizeof(marker),
                         "\n[cellvm: output truncated: %zu more bytes not shown, only the first "
                         "%zu are kept]",
                         t->cut, t->max);
        size_t ll = label ? strlen(label) : 0;
        size_t total = ll + t->len + strlen(marker);
        char *s = malloc(total + 1);
        if (!s)
                return -ENOMEM;
        if (ll)
                memcpy(s, label, ll);
        if (t->len)
                memcpy(s + ll, t->buf, t->len);
        memcpy(s + ll + t->len, marker, strlen(marker) + 1);
        json_t *item = json_pack("{s:s, s:s%}", "type", "text", "text", s, total);
        free(s);
        if (!item)
                return -ENOMEM;
        return json_array_append_new(content, item) < 0 ? -ENOMEM : 0;
}

int mcp_add_string(json_t *content, const char *text)
{
        struct mcp_text t = {.max = MCP_OUTPUT_MAX};
        int rc = mcp_text_add(&t, text, strlen(text));
        if (rc == 0)
                rc = mcp_add_text(content, NULL, &t);
        mcp_text_free(&t);
        return rc;
}

int mcp_add_image(json_t *content, const char *mime, const void *data, size_t n, bool is_base64)
{
        char *b64 = is_base64 ? strndup(data, n) : base64_encode(data, n);
        if (!b64)
                return -ENOMEM;
        json_t *item = json_pack("{s:s, s:s, s:s}", "type", "image", "data", b64, "mimeType", mime);
        free(b64);
        if (!item)
                return -EINVAL;
        return json_array_append_new(content, item) < 0 ? -ENOMEM : 0;
}

json_t *mcp_tool_result(json_t *content, bool is_error)
{
        if (json_array_size(content) == 0)
                (void)mcp_add_string(content, "(no output)");
        return json_pack("{s:o, s:b}", "content", content, "isError", is_error);
}

json_t *mcp_tool_error(const char *fmt, ...)
{
        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_t *content = json_array();
        if (!content)
                return NULL;
        (void)mcp_add_string(content, msg);
        return mcp_tool_result(content, true);
}
