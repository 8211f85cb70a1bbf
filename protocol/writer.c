#include "writer.h"

#include <errno.h>
#include <string.h>

#include "cbor_util.h"
#include "frame.h"
#include "msgtypes.h"

static void put_hdr(uint8_t *at, uint32_t len, uint16_t type, uint16_t flags, uint32_t id)
{
        struct cv_frame_hdr h = {.len = len, .type = type, .flags = flags, .id = id};
        cv_frame_hdr_encode(&h, at);
}

static size_t frames_for(size_t len)
{
        return len == 0 ? 1 : (len + CV_MAX_BODY - 1) / CV_MAX_BODY;
}

int cv_out_msg(struct cv_buf *b, uint16_t type, uint16_t flags, uint32_t id, const void *body,
               size_t len)
{
        if (b->err) {
                int err = b->err;
                b->err = 0;
                return err;
        }
        if (len > CV_DEFAULT_MAX_MESSAGE)
                return -EMSGSIZE;
        size_t nframes = frames_for(len);
        int rc = cv_buf_reserve(b, len + nframes * CV_HDR_SIZE);
        if (rc < 0) {
                b->err = 0;
                return rc;
        }
        const uint8_t *p = body;
        size_t left = len;
        do {
                size_t piece = left > CV_MAX_BODY ? CV_MAX_BODY : left;
                left -= piece;
                put_hdr(b->data + b->len, (uint32_t)piece, type,
                        (uint16_t)(flags | (left ? CV_FLAG_MORE : 0)), id);
                b->len += CV_HDR_SIZE;
                if (piece)
                        memcpy(b->data + b->len, p, piece);
                b->len += piece;
                p += piece;
        } while (left);
        return 0;
}

int cv_out_begin(struct cv_buf *b, size_t *mark)
{
        /* Relative to `start`: reserve() may compact the buffer, which keeps that offset. */
        *mark = cv_buf_pending(b);
        static const uint8_t blank[CV_HDR_SIZE];
        return cv_buf_append(b, blank, sizeof(blank));
}

void cv_out_abort(struct cv_buf *b, size_t mark)
{
        cv_buf_truncate(b, b->start + mark);
        b->err = 0;
}

int cv_out_end(struct cv_buf *b, size_t mark, uint16_t type, uint32_t id)
{
        if (b->err) {
                int err = b->err;
                cv_out_abort(b, mark);
                return err;
        }
        size_t body_len = cv_buf_pending(b) - mark - CV_HDR_SIZE;
        if (body_len > CV_DEFAULT_MAX_MESSAGE) {
                cv_out_abort(b, mark);
                return -EMSGSIZE;
        }
        size_t nframes = frames_for(body_len);
        if (nframes > 1) {
                int rc = cv_buf_reserve(b, (nframes - 1) * CV_HDR_SIZE);
                if (rc < 0) {
                        cv_out_abort(b, mark);
                        return rc;
                }
        }
        uint8_t *msg = b->data + b->start + mark;
        /* Spread the pieces from the last one backwards, each after its own header. */
        for (size_t i = nframes; i-- > 1;) {
                size_t src = CV_HDR_SIZE + i * CV_MAX_BODY;
                size_t piece = body_len - i * CV_MAX_BODY;
                if (piece > CV_MAX_BODY)
                        piece = CV_MAX_BODY;
                size_t dst = i * (CV_HDR_SIZE + CV_MAX_BODY) + CV_HDR_SIZE;
                memmove(msg + dst, msg + src, piece);
                put_hdr(msg + dst - CV_HDR_SIZE, (uint32_t)piece, type,
                        i + 1 < nframes ? CV_FLAG_MORE : 0, id);
        }
        size_t first = body_len > CV_MAX_BODY ? CV_MAX_BODY : body_len;
        put_hdr(msg, (uint32_t)first, type, nframes > 1 ? CV_FLAG_MORE : 0, id);
        b->len += (nframes - 1) * CV_HDR_SIZE;
        return 0;
}

int cv_out_error(struct cv_buf *b, uint32_t id, const char *code, const char *message)
{
        size_t mark;
        int rc = cv_out_begin(b, &mark);
        if (rc < 0) {
                cv_out_abort(b, mark);
                return rc;
        }
        cv_enc_map(b, 2);
        cv_enc_cstr(b, "code");
        cv_enc_cstr(b, code);
        cv_enc_cstr(b, "message");
        cv_enc_cstr(b, message ? message : "");
        return cv_out_end(b, mark, CV_MSG_ERROR, id);
}
