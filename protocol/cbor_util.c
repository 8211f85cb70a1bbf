#include "cbor_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Largest CBOR item head: initial byte plus an 8-byte argument. */
#define CV_CBOR_HEAD_MAX 9

/* --- encoding --- */

typedef size_t (*head_encoder)(uint64_t, unsigned char *, size_t);

static int enc_head(struct cv_buf *b, head_encoder fn, uint64_t v)
{
        int rc = cv_buf_reserve(b, CV_CBOR_HEAD_MAX);
        if (rc < 0)
                return rc;
        size_t n = fn(v, b->data + b->len, b->cap - b->len);
        if (n == 0)
                return b->err = -ENOBUFS;
        b->len += n;
        return 0;
}

static size_t enc_map_start(uint64_t n, unsigned char *p, size_t size)
{
        return cbor_encode_map_start((size_t)n, p, size);
}

static size_t enc_array_start(uint64_t n, unsigned char *p, size_t size)
{
        return cbor_encode_array_start((size_t)n, p, size);
}

static size_t enc_string_start(uint64_t n, unsigned char *p, size_t size)
{
        return cbor_encode_string_start((size_t)n, p, size);
}

static size_t enc_bytes_start(uint64_t n, unsigned char *p, size_t size)
{
        return cbor_encode_bytestring_start((size_t)n, p, size);
}

int cv_enc_map(struct cv_buf *b, size_t npairs)
{
        return enc_head(b, enc_map_start, npairs);
}

int cv_enc_array(struct cv_buf *b, size_t nitems)
{
        return enc_head(b, enc_array_start, nitems);
}

int cv_enc_text(struct cv_buf *b, const char *s, size_t len)
{
        int rc = enc_head(b, enc_string_start, len);
        return rc < 0 ? rc : cv_buf_append(b, s, len);
}

int cv_enc_cstr(struct cv_buf *b, const char *s)
{
        return cv_enc_text(b, s, strlen(s));
}

int cv_enc_bytes(struct cv_buf *b, const void *p, size_t len)
{
        int rc = enc_head(b, enc_bytes_start, len);
        return rc < 0 ? rc : cv_buf_append(b, p, len);
}

int cv_enc_uint(struct cv_buf *b, uint64_t v)
{
        return enc_head(b, cbor_encode_uint, v);
}

int cv_enc_int(struct cv_buf *b, int64_t v)
{
        if (v >= 0)
                return enc_head(b, cbor_encode_uint, (uint64_t)v);
        /* CBOR stores -1 - n; written this way it cannot overflow for INT64_MIN. */
        return enc_head(b, cbor_encode_negint, (uint64_t)(-(v + 1)));
}

int cv_enc_bool(struct cv_buf *b, bool v)
{
        uint8_t byte = v ? 0xf5 : 0xf4;
        return cv_buf_append(b, &byte, 1);
}

int cv_enc_null(struct cv_buf *b)
{
        uint8_t byte = 0xf6;
        return cv_buf_append(b, &byte, 1);
}

int cv_enc_double(struct cv_buf *b, double v)
{
        int rc = cv_buf_reserve(b, CV_CBOR_HEAD_MAX);
        if (rc < 0)
                return rc;
        size_t n = cbor_encode_double(v, b->data + b->len, b->cap - b->len);
        if (n == 0)
                return b->err = -ENOBUFS;
        b->len += n;
        return 0;
}

int cv_enc_tag(struct cv_buf *b, uint64_t tag)
{
        return enc_head(b, cbor_encode_tag, tag);
}

int cv_enc_item(struct cv_buf *b, const cbor_item_t *item)
{
        if (b->err)
                return b->err;
        unsigned char *out = NULL;
        size_t out_size = 0;
        size_t n = cbor_serialize_alloc(item, &out, &out_size);
        if (n == 0) {
                free(out);
                return b->err = -ENOMEM;
        }
        int rc = cv_buf_append(b, out, n);
        free(out);
        return rc;
}

/* --- structure check before cbor_load --- */

struct check_level {
        size_t left; /* items still expected (definite containers and tags) */
        size_t seen; /* items seen (indefinite containers) */
        bool indefinite;
        bool is_map;
};

struct check {
        struct check_level lv[CV_CBOR_MAX_DEPTH + 1];
        unsigned depth;
        unsigned max_depth;
        size_t items;
        size_t max_items;
        size_t input_left; /* bytes after the item being decoded: bounds declared sizes */
        bool top_done;
        bool bad;
};

static void item_done(struct check *c)
{
        if (++c->items > c->max_items)
                c->bad = true;
        for (;;) {
                if (c->depth == 0) {
                        if (c->top_done)
                                c->bad = true;
                        c->top_done = true;
                        return;
                }
                struct check_level *l = &c->lv[c->depth - 1];
                if (l->indefinite) {
                        l->seen++;
                        return;
                }
                if (--l->left > 0)
                        return;
                c->depth--; /* container complete: one item of its parent */
        }
}

static void open_level(struct check *c, size_t n, bool indefinite, bool is_map)
{
        if (!indefinite && n == 0) {
                item_done(c);
                return;
        }
        if (c->depth >= c->max_depth) {
                c->bad = true;
                return;
        }
        size_t per = is_map ? 2 : 1;
        /* Every item takes at least one byte: a larger declared size is a lie. */
        if (!indefinite && n > c->input_left / per) {
                c->bad = true;
                return;
        }
        c->lv[c->depth++] = (struct check_level){
            .left = indefinite ? 0 : n * per,
            .indefinite = indefinite,
            .is_map = is_map,
        };
}

static void on_scalar8(void *ctx, uint8_t v)
{
        (void)v;
        item_done(ctx);
}

static void on_scalar16(void *ctx, uint16_t v)
{
        (void)v;
        item_done(ctx);
}

static void on_scalar32(void *ctx, uint32_t v)
{
        (void)v;
        item_done(ctx);
}

static void on_scalar64(void *ctx, uint64_t v)
{
        (void)v;
        item_done(ctx);
}

static void on_string(void *ctx, cbor_data p, size_t n)
{
        (void)p;
        (void)n;
        item_done(ctx);
}

static void on_simple(void *ctx)
{
        item_done(ctx);
}

static void on_float(void *ctx, float v)
{
        (void)v;
        item_done(ctx);
}

static void on_double(void *ctx, double v)
{
        (void)v;
        item_done(ctx);
}

static void on_bool(void *ctx, bool v)
{
        (void)v;
        item_done(ctx);
}

static void on_indef_string(void *ctx)
{
        open_level(ctx, 0, true, false);
}

static void on_array(void *ctx, size_t n)
{
        open_level(ctx, n, false, false);
}

static void on_indef_array(void *ctx)
{
        open_level(ctx, 0, true, false);
}

static void on_map(void *ctx, size_t n)
{
        struct check *c = ctx;
        if (n > SIZE_MAX / 2) {
                c->bad = true;
                return;
        }
        open_level(ctx, n, false, true);
}

static void on_indef_map(void *ctx)
{
        open_level(ctx, 0, true, true);
}

static void on_tag(void *ctx, uint64_t tag)
{
        (void)tag;
        open_level(ctx, 1, false, false);
}

static void on_break(void *ctx)
{
        struct check *c = ctx;
        if (c->depth == 0 || !c->lv[c->depth - 1].indefinite ||
            (c->lv[c->depth - 1].is_map && c->lv[c->depth - 1].seen % 2 != 0)) {
                c->bad = true;
                return;
        }
        c->depth--;
        item_done(c);
}

static const struct cbor_callbacks check_callbacks = {
    .uint8 = on_scalar8,
    .uint16 = on_scalar16,
    .uint32 = on_scalar32,
    .uint64 = on_scalar64,
    .negint8 = on_scalar8,
    .negint16 = on_scalar16,
    .negint32 = on_scalar32,
    .negint64 = on_scalar64,
    .byte_string = on_string,
    .byte_string_start = on_indef_string,
    .string = on_string,
    .string_start = on_indef_string,
    .array_start = on_array,
    .indef_array_start = on_indef_array,
    .map_start = on_map,
    .indef_map_start = on_indef_map,
    .tag = on_tag,
    .float2 = on_float,
    .float4 = on_float,
    .float8 = on_double,
    .undefined = on_simple,
    .null = on_simple,
    .boolean = on_bool,
    .indef_break = on_break,
};

int cv_cbor_check(const uint8_t *data, size_t len, unsigned max_depth, size_t max_items)
{
        struct check c = {
            .max_depth = max_depth > CV_CBOR_MAX_DEPTH ? CV_CBOR_MAX_DEPTH : max_depth,
            .max_items = max_items,
        };
        size_t pos = 0;
        while (!c.top_done) {
                if (pos >= len)
                        return -EINVAL; /* truncated */
                c.input_left = len - pos - 1;
                struct cbor_decoder_result r =
                    cbor_stream_decode(data + pos, len - pos, &check_callbacks, &c);
                if (r.status != CBOR_DECODER_FINISHED || r.read == 0 || c.bad)
                        return -EINVAL;
                pos += r.read;
        }
        return pos == len ? 0 : -EINVAL;
}

int cv_body_parse(const uint8_t *body, size_t len, cbor_item_t **out)
{
        return cv_body_parse_limited(body, len, CV_CBOR_MAX_DEPTH, CV_CBOR_MAX_ITEMS, out);
}

int cv_body_parse_limited(const uint8_t *body, size_t len, unsigned max_depth, size_t max_items,
                          cbor_item_t **out)
{
        *out = NULL;
        if (len == 0) {
                *out = cbor_new_definite_map(0);
                return *out ? 0 : -ENOMEM;
        }
        int rc = cv_cbor_check(body, len, max_depth, max_items);
        if (rc < 0)
                return rc;
        struct cbor_load_result res;
        cbor_item_t *item = cbor_load(body, len, &res);
        if (!item)
                return res.error.code == CBOR_ERR_MEMERROR ? -ENOMEM : -EINVAL;
        if (res.read != len) {
                cbor_decref(&item);
                return -EINVAL;
        }
        if (!cbor_isa_map(item)) {
                cbor_decref(&item);
                return -EPROTOTYPE;
        }
        *out = item;
        return 0;
}

/* --- lookups --- */

bool cv_utf8_valid(const uint8_t *p, size_t len)
{
        size_t i = 0;
        while (i < len) {
                uint8_t c = p[i];
                if (c < 0x80) {
                        i++;
                        continue;
                }
                size_t n;
                uint32_t cp, min;
                if ((c & 0xe0) == 0xc0) {
                        n = 1, cp = c & 0x1f, min = 0x80;
                } else if ((c & 0xf0) == 0xe0) {
                        n = 2, cp = c & 0x0f, min = 0x800;
                } else if ((c & 0xf8) == 0xf0) {
                        n = 3, cp = c & 0x07, min = 0x10000;
                } else {
                        return false;
                }
                if (len - i - 1 < n)
                        return false;
                for (size_t k = 1; k <= n; k++) {
                        if ((p[i + k] & 0xc0) != 0x80)
                                return false;
                        cp = cp << 6 | (p[i + k] & 0x3f);
                }
                if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
                i += n + 1;
        }
        return true;
}

cbor_item_t *cv_map_get(const cbor_item_t *map, const char *key)
{
        if (!map || !cbor_isa_map(map))
                return NULL;
        size_t klen = strlen(key);
        struct cbor_pair *pairs = cbor_map_handle(map);
        size_t n = cbor_map_size(map);
        for (size_t i = 0; i < n; i++) {
                const cbor_item_t *k = pairs[i].key;
                if (!k || !cbor_isa_string(k) || !cbor_string_is_definite(k))
                        continue;
                if (cbor_string_length(k) == klen &&
                    (klen == 0 || memcmp(cbor_string_handle(k), key, klen) == 0))
                        return pairs[i].value;
        }
        return NULL;
}

int cv_item_str(const cbor_item_t *item, const char **p, size_t *len)
{
        if (!cbor_isa_string(item) || !cbor_string_is_definite(item))
                return -EINVAL;
        size_t n = cbor_string_length(item);
        const uint8_t *data = cbor_string_handle(item);
        if (n > 0 && !data)
                return -EINVAL;
        if (!cv_utf8_valid(data, n))
                return -EINVAL;
        *p = n ? (const char *)data : "";
        *len = n;
        return 0;
}

int cv_item_uint(const cbor_item_t *item, uint64_t *out)
{
        if (!cbor_isa_uint(item))
                return -EINVAL;
        *out = cbor_get_int(item);
        return 0;
}

int cv_map_get_str(const cbor_item_t *map, const char *key, const char **p, size_t *len)
{
        cbor_item_t *v = cv_map_get(map, key);
        return v ? cv_item_str(v, p, len) : -ENOENT;
}

int cv_map_dup_str(const cbor_item_t *map, const char *key, char **out)
{
        const char *p;
        size_t len;
        int rc = cv_map_get_str(map, key, &p, &len);
        if (rc < 0)
                return rc;
        if (memchr(p, 0, len))
                return -EINVAL;
        char *s = malloc(len + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, p, len);
        s[len] = 0;
        *out = s;
        return 0;
}

int cv_map_get_bytes(const cbor_item_t *map, const char *key, const uint8_t **p, size_t *len)
{
        cbor_item_t *v = cv_map_get(map, key);
        if (!v)
                return -ENOENT;
        if (!cbor_isa_bytestring(v) || !cbor_bytestring_is_definite(v))
                return -EINVAL;
        size_t n = cbor_bytestring_length(v);
        const uint8_t *data = cbor_bytestring_handle(v);
        if (n > 0 && !data)
                return -EINVAL;
        static const uint8_t empty[1];
        *p = n ? data : empty;
        *len = n;
        return 0;
}

int cv_map_get_uint(const cbor_item_t *map, const char *key, uint64_t *out)
{
        cbor_item_t *v = cv_map_get(map, key);
        return v ? cv_item_uint(v, out) : -ENOENT;
}

int cv_map_get_int(const cbor_item_t *map, const char *key, int64_t *out)
{
        cbor_item_t *v = cv_map_get(map, key);
        if (!v)
                return -ENOENT;
        if (!cbor_is_int(v))
                return -EINVAL;
        uint64_t n = cbor_get_int(v);
        if (n > INT64_MAX)
                return -EINVAL;
        *out = cbor_isa_uint(v) ? (int64_t)n : -1 - (int64_t)n;
        return 0;
}

int cv_map_get_bool(const cbor_item_t *map, const char *key, bool *out)
{
        cbor_item_t *v = cv_map_get(map, key);
        if (!v)
                return -ENOENT;
        /* cbor_is_bool() asserts on floats in libcbor 0.8: check the width first. */
        if (!cbor_isa_float_ctrl(v) || !cbor_float_ctrl_is_ctrl(v) || !cbor_is_bool(v))
                return -EINVAL;
        *out = cbor_get_bool(v);
        return 0;
}

int cv_map_get_map(const cbor_item_t *map, const char *key, cbor_item_t **out)
{
        cbor_item_t *v = cv_map_get(map, key);
        if (!v)
                return -ENOENT;
        if (!cbor_isa_map(v))
                return -EINVAL;
        *out = v;
        return 0;
}

int cv_map_get_array(const cbor_item_t *map, const char *key, cbor_item_t **out)
{
        cbor_item_t *v = cv_map_get(map, key);
        if (!v)
                return -ENOENT;
        if (!cbor_isa_array(v))
                return -EINVAL;
        *out = v;
        return 0;
}
