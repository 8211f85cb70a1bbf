/*
 * One agent connection shared by many HTTP requests (cellvm serve): requests
 * are multiplexed by id (docs/PROTOCOL.md section 3). A reader thread decodes
 * what the agent sends and queues it on the request it belongs to; writers
 * take turns under a lock. Everything the agent sends is decoded by
 * cvc_event_decode (bounded, checked) before it is queued.
 */
#ifndef CELLVM_CLIENT_SERVE_MUX_H
#define CELLVM_CLIENT_SERVE_MUX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cellvm.h"

/* A request's queue stops the reader (and so the connection) past this many
 * bytes of undelivered bodies until its consumer catches up or leaves. */
#define MUX_QUEUE_MAX_BYTES (8u << 20)

struct mux_item;

struct mux_req {
        uint32_t id;
        struct mux *m;
        struct mux_item *head, *tail;
        size_t queued_bytes;
        bool ended;     /* the terminal message was queued */
        bool abandoned; /* the consumer left: drop what comes */
        bool lossy;     /* past the bound, drop messages (counted) instead of waiting */
        size_t dropped;
        struct mux_req *next;
};

struct mux {
        struct cvc *c; /* owned: closed by mux_close */
        int fd;
        pthread_t reader;
        bool reader_started;
        pthread_mutex_t lock; /* the fields below and every request's queue */
        pthread_cond_t cond;  /* a queue grew or drained, or the connection broke */
        pthread_mutex_t write_lock;
        struct mux_req *reqs;
        uint32_t next_id;
        bool broken;
        char why[256];
};

/* Takes over `c` (connected, after the restore's handshake) and starts the
 * reader. 0 or a negative errno (then `c` is still the caller's). */
int mux_start(struct mux *m, struct cvc *c);
/* Stops the reader (shuts the socket down), fails every request, closes `c`. */
void mux_close(struct mux *m);

/* A new request: registered before it is sent so no reply is missed. */
int mux_open(struct mux *m, struct mux_req **out);
/* Makes `r` lossy (see struct mux_req): for streams of events that may be
 * collected late or never (watches). Call before sending it. */
void mux_set_lossy(struct mux_req *r);
/* Sends one message of `r` (its first, or FILE_DATA for it). */
int mux_send(struct mux_req *r, uint16_t type, const uint8_t *body, size_t len);
/* mux_send of a body encoded in a cv_buf (an encoding error is returned). */
struct cv_buf;
int mux_send_buf(struct mux_req *r, uint16_t type, struct cv_buf *b);
/* The next message of `r`: 1 with `ev` set (cvc_event_free it), 0 after
 * `timeout_ms` (< 0: wait), -ECONNRESET when the connection broke first,
 * -ENODATA after the terminal message was taken. */
int mux_next(struct mux_req *r, int timeout_ms, struct cvc_event *ev);
/* The consumer is done with `r`: its queue is dropped, later messages too
 * (the request itself is not cancelled: send CANCEL first for that). */
void mux_close_req(struct mux_req *r);

/* A whole request with a CBOR body: its terminal reply (OK's body in *reply,
 * or -EREMOTEIO with the agent's code and message in `err`). */
int mux_call(struct mux *m, uint16_t type, struct cv_buf *body, int timeout_ms, cbor_item_t **reply,
             char *err, size_t errlen);

#endif
