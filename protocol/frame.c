#include "frame.h"

#include <errno.h>

void cv_frame_hdr_encode(const struct cv_frame_hdr *h, uint8_t out[CV_HDR_SIZE])
{
        out[0] = (uint8_t)(h->len >> 24);
        out[1] = (uint8_t)(h->len >> 16);
        out[2] = (uint8_t)(h->len >> 8);
        out[3] = (uint8_t)h->len;
        out[4] = (uint8_t)(h->type >> 8);
        out[5] = (uint8_t)h->type;
        out[6] = (uint8_t)(h->flags >> 8);
        out[7] = (uint8_t)h->flags;
        out[8] = (uint8_t)(h->id >> 24);
        out[9] = (uint8_t)(h->id >> 16);
        out[10] = (uint8_t)(h->id >> 8);
        out[11] = (uint8_t)h->id;
}

int cv_frame_hdr_decode(const uint8_t in[CV_HDR_SIZE], struct cv_frame_hdr *h)
{
        h->len = (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
        h->type = (uint16_t)(in[4] << 8 | in[5]);
        h->flags = (uint16_t)(in[6] << 8 | in[7]);
        h->id = (uint32_t)in[8] << 24 | (uint32_t)in[9] << 16 | (uint32_t)in[10] << 8 | in[11];
        if (h->len > CV_MAX_BODY || (h->flags & ~CV_FLAGS_KNOWN) != 0)
                return -EBADMSG;
        return 0;
}
