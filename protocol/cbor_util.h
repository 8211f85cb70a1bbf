/*
 * CBOR bodies on top of libcbor (docs/PROTOCOL.md section 2).
 *
 * Encoding: cv_enc_* write one data item (or a container header) with libcbor's
 * streaming encoder straight into a cv_buf. They share the buffer's sticky
 * error, so encode a whole body and check the result of cv_out_end() (or
 * b->err) once. Each returns 0 or that error.
 *
 * Decoding: cv_body_parse() turns a message body into a libcbor item tree
 * (after checking its nesting depth and declared sizes, so hostile input can
 * neither blow the stack nor make libcbor allocate for items that are not
 * there); the cv_map_get_* accessors look up text keys with type and bounds
 * checks. They return 0, -ENOENT (key absent) or -EINVAL (wrong CBOR type,
 * indefinite-length string, invalid UTF-8, value out of range).
 */
#ifndef CELLVM_CBOR_UTIL_H
#define CELLVM_CBOR_UTIL_H

#include <cbor.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Deepest container nesting cv_body_parse() accepts (the body map is level 1). */
#define CV_CBOR_MAX_DEPTH 64
/*
 * Most data items cv_body_parse() accepts. libcbor allocates a node of about
 * 64 bytes per item, so this bounds a body's tree to roughly 64 MiB whatever
 * the body size.
 */
#define CV_CBOR_MAX_ITEMS (1u << 20)

/* --- encoding --- */
int cv_enc_map(struct cv_buf *b, size_t npairs);
int cv_enc_array(struct cv_buf *b, size_t nitems);
/* Text string of `len` bytes; the caller guarantees valid UTF-8. */
int cv_enc_text(struct cv_buf *b, const char *s, size_t len);
/* NUL-terminated text string. */
int cv_enc_cstr(struct cv_buf *b, const char *s);
int cv_enc_bytes(struct cv_buf *b, const void *p, size_t len);
int cv_enc_uint(struct cv_buf *b, uint64_t v);
int cv_enc_int(struct cv_buf *b, int64_t v);
int cv_enc_bool(struct cv_buf *b, bool v);
int cv_enc_null(struct cv_buf *b);
int cv_enc_double(struct cv_buf *b, double v);
/* The head of a tagged item (RFC 8949 3.4): the tagged item follows. */
int cv_enc_tag(struct cv_buf *b, uint64_t tag);
/* Serialises an item tree (e.g. to echo a decoded value back). */
int cv_enc_item(struct cv_buf *b, const cbor_item_t *item);

/* --- decoding --- */

/*
 * Checks that `data` is exactly one well-formed CBOR item nested at most
 * `max_depth` (capped at CV_CBOR_MAX_DEPTH) deep, made of at most `max_items`
 * data items, whose declared container sizes fit in the input. Returns 0 or
 * -EINVAL.
 */
int cv_cbor_check(const uint8_t *data, size_t len, unsigned max_depth, size_t max_items);

/*
 * Parses a message body: length 0 is the empty map. On success `*out` is a map
 * the caller releases with cbor_decref(). Returns 0, -EINVAL (not one
 * well-formed CBOR item, too deep, trailing bytes), -EPROTOTYPE (well-formed
 * but not a map) or -ENOMEM.
 */
int cv_body_parse(const uint8_t *body, size_t len, cbor_item_t **out);

/* cv_body_parse() with other limits (e.g. a client accepting large DataFrames). */
int cv_body_parse_limited(const uint8_t *body, size_t len, unsigned max_depth, size_t max_items,
                          cbor_item_t **out);

/* The value under text key `key` (borrowed), or NULL if absent or `map` is not a map. */
cbor_item_t *cv_map_get(const cbor_item_t *map, const char *key);

/* Text value: `*p`/`*len` borrow the item's bytes (not NUL-terminated); checks UTF-8. */
int cv_map_get_str(const cbor_item_t *map, const char *key, const char **p, size_t *len);
/* Text value copied into a malloc'd NUL-terminated string; -EINVAL if it holds a NUL. */
int cv_map_dup_str(const cbor_item_t *map, const char *key, char **out);
int cv_map_get_bytes(const cbor_item_t *map, const char *key, const uint8_t **p, size_t *len);
int cv_map_get_uint(const cbor_item_t *map, const char *key, uint64_t *out);
int cv_map_get_int(const cbor_item_t *map, const char *key, int64_t *out);
int cv_map_get_bool(const cbor_item_t *map, const char *key, bool *out);
/* Borrowed container values. */
int cv_map_get_map(const cbor_item_t *map, const char *key, cbor_item_t **out);
int cv_map_get_array(const cbor_item_t *map, const char *key, cbor_item_t **out);

/* The same checks on an item itself (array elements, map values being walked). */
int cv_item_str(const cbor_item_t *item, const char **p, size_t *len);
int cv_item_uint(const cbor_item_t *item, uint64_t *out);

/* True if `p[0..len)` is valid UTF-8 (no overlongs, surrogates or values past U+10FFFF). */
bool cv_utf8_valid(const uint8_t *p, size_t len);

#endif
