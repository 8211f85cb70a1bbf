/* Decoding of agent messages on the host: the guest is untrusted, so every
 * field is type- and bounds-checked here before callers get a pointer. */
#include "cellvm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cbor_util.h"
#include "msgtypes.h"

/* A host accepts bigger result trees than the agent accepts requests
 * (DataFrames as e2b/data), but still a bounded number of nodes. */
#define CVC_BODY_MAX_ITEMS (4u << 20)

static int decode_bundle(struct cvc_event *ev, const cbor_item_t *root)
{
        cbor_item_t *data;
        int rc = cv_map_get_map(root, "data", &data);
        if (rc < 0)
                return rc;
        size_t n = cbor_map_size(data);
        if (n > CVC_MAX_MIMES)
                n = CVC_MAX_MIMES; /* keep the first ones; the rest is dropped */
        struct cbor_pair *pairs = cbor_map_handle(data);
        size_t names = 0;
        for (size_t i = 0; i < n; i++) {
                const char *k;
                size_t klen;
                if (cv_item_str(pairs[i].key, &k, &klen) < 0)
                        return -EINVAL;
                names += klen + 1;
        }
        ev->owned = malloc(names ? names : 1);
        if (!ev->owned)
                return -ENOMEM;
        char *at = ev->owned;
        for (size_t i = 0; i < n; i++) {
                struct cvc_mime *m = &ev->u.display.mime[i];
                const char *k;
                size_t klen;
                (void)cv_item_str(pairs[i].key, &k, &klen); /* checked above */
                if (memchr(k, '\0', klen))
                        return -EINVAL;
                memcpy(at, k, klen);
                at[klen] = '\0';
                m->mime = at;
                at += klen + 1;
                const cbor_item_t *v = pairs[i].value;
                const char *s;
                size_t slen;
                if (cbor_isa_string(v)) {
                        if (cv_item_str(v, &s, &slen) < 0)
                                return -EINVAL;
                        m->kind = CVC_MIME_TEXT;
                        m->data = (const uint8_t *)s;
                        m->len = slen;
                } else if (cbor_isa_bytestring(v) && cbor_bytestring_is_definite(v)) {
                        m->kind = CVC_MIME_BYTES;
                        m->data = cbor_bytestring_handle(v);
                        m->len = cbor_bytestring_length(v);
                } else {
                        m->kind = CVC_MIME_OTHER;
                        m->data = NULL;
                        m->len = 0;
                }
        }
        ev->u.display.nmime = n;
        return 0;
}

static int decode_exec_error(struct cvc_event *ev, const cbor_item_t *root)
{
        int rc = cv_map_get_str(root, "name", &ev->u.error.name, &ev->u.error.name_len);
        if (rc < 0)
                return rc;
        rc = cv_map_get_str(root, "value", &ev->u.error.value, &ev->u.error.value_len);
        if (rc < 0)
                return rc;
        cbor_item_t *tb;
        rc = cv_map_get_array(root, "traceback", &tb);
        if (rc == -ENOENT)
                return 0;
        if (rc < 0)
                return rc;
        size_t n = cbor_array_size(tb);
        if (n > CVC_MAX_TRACEBACK)
                n = CVC_MAX_TRACEBACK;
        cbor_item_t **items = cbor_array_handle(tb);
        for (size_t i = 0; i < n; i++) {
                rc = cv_item_str(items[i], &ev->u.error.tb[i], &ev->u.error.tb_len[i]);
                if (rc < 0)
                        return rc;
        }
        ev->u.error.ntb = n;
        return 0;
}

static int decode_body(struct cvc_event *ev)
{
        const cbor_item_t *root = ev->root;
        const char *name;
        size_t len;
        int rc;

        switch (ev->type) {
        case CV_MSG_EXEC_INPUT:
                return cv_map_get_uint(root, "execution_count", &ev->u.input.execution_count);
        case CV_MSG_STREAM:
                rc = cv_map_get_str(root, "name", &name, &len);
                if (rc < 0)
                        return rc;
                if (len == 6 && memcmp(name, "stdout", 6) == 0)
                        ev->u.stream.is_stderr = false;
                else if (len == 6 && memcmp(name, "stderr", 6) == 0)
                        ev->u.stream.is_stderr = true;
                else
                        return -EINVAL;
                return cv_map_get_str(root, "text", &ev->u.stream.text, &ev->u.stream.len);
        case CV_MSG_RESULT:
                rc = cv_map_get_uint(root, "execution_count", &ev->u.display.execution_count);
                if (rc < 0)
                        return rc;
                return decode_bundle(ev, root);
        case CV_MSG_DISPLAY:
                return decode_bundle(ev, root);
        case CV_MSG_EXEC_ERROR:
                return decode_exec_error(ev, root);
        case CV_MSG_ERROR:
                rc = cv_map_get_str(root, "code", &ev->u.fail.code, &ev->u.fail.code_len);
                if (rc < 0)
                        return rc;
                rc = cv_map_get_str(root, "message", &ev->u.fail.message, &ev->u.fail.message_len);
                if (rc == -ENOENT) {
                        ev->u.fail.message = "";
                        ev->u.fail.message_len = 0;
                        return 0;
                }
                return rc;
        default:
                return 0;
        }
}

int cvc_event_decode(uint16_t type, uint32_t id, const uint8_t *body, size_t len,
                     struct cvc_event *ev)
{
        memset(ev, 0, sizeof(*ev));
        ev->type = type;
        ev->id = id;
        int rc = cv_body_parse_limited(body, len, CV_CBOR_MAX_DEPTH, CVC_BODY_MAX_ITEMS, &ev->root);
        if (rc < 0)
                return rc;
        rc = decode_body(ev);
        if (rc < 0)
                cvc_event_free(ev);
        return rc;
}

void cvc_event_free(struct cvc_event *ev)
{
        if (ev->root)
                cbor_decref(&ev->root);
        free(ev->owned);
        ev->owned = NULL;
}
