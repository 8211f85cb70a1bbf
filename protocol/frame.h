/* Frame header of the cellvm wire protocol (docs/PROTOCOL.md section 2). */
#ifndef CELLVM_FRAME_H
#define CELLVM_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define CV_PROTOCOL_VERSION 1u
#define CV_HDR_SIZE 12u
/* Header plus body of one frame. */
#define CV_MAX_FRAME (4u * 1024u * 1024u)
/* Largest body of one frame: 4 194 292. */
#define CV_MAX_BODY (CV_MAX_FRAME - CV_HDR_SIZE)
/* Flag bit 0: the message body continues in the next frame. */
#define CV_FLAG_MORE 0x0001u
#define CV_FLAGS_KNOWN CV_FLAG_MORE
/* Largest reassembled message the agent accepts and sends (announced in HELLO). */
#define CV_DEFAULT_MAX_MESSAGE (64u * 1024u * 1024u)

struct cv_frame_hdr {
        uint32_t len; /* body bytes, header excluded */
        uint16_t type;
        uint16_t flags;
        uint32_t id;
};

/* Writes the 12 big-endian header bytes of `h` to `out`. */
void cv_frame_hdr_encode(const struct cv_frame_hdr *h, uint8_t out[CV_HDR_SIZE]);

/*
 * Decodes 12 header bytes into `h`. Returns 0, or -EBADMSG when the length is
 * over CV_MAX_BODY or a flag bit other than MORE is set (`h` is filled anyway,
 * so the caller can log what it got).
 */
int cv_frame_hdr_decode(const uint8_t in[CV_HDR_SIZE], struct cv_frame_hdr *h);

#endif
