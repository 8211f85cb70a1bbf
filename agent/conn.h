/* Client connections (conn.c): reading requests, queuing replies, flow control, disconnects. */
#ifndef CELLVM_AGENT_CONN_H
#define CELLVM_AGENT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "loop.h"
#include "reader.h"

struct agent;
struct exec;
struct svc_req;

enum transport { TR_UNIX, TR_VSOCK, TR_TCP, TR_SERIAL };

/* Output queued for a connection past which the agent stops reading what feeds it. */
#define CONN_HIGH_WATER (4u * 1024u * 1024u)
/* read()s per wakeup of a connection (cv_reader_read): a frame of 64 KiB is 16 pages of a
 * virtio-serial port; more than that waits for the next round of the loop. */
#define CONN_MAX_READS 64u
/* Requests one connection may have in flight (queued or running executions). */
#define CONN_MAX_INFLIGHT 1024u

struct conn {
        struct conn *next;
        unsigned num; /* for logs */
        enum transport kind;
        /* Told when the connection closes, by whoever opened it (the serial port reopens). */
        void (*closed)(struct conn *c, void *owner);
        void *owner;
        struct watch w;
        struct cv_reader rd;
        struct cv_buf out;
        bool hello_done;
        bool dirty;           /* output appended since the last flush */
        bool closing;         /* flush what can be flushed, then close */
        struct exec *execs;   /* in flight, linked by conn_next */
        struct svc_req *svcs; /* files, commands and ports requests in flight (svc.h) */
        unsigned ninflight;
};

/* What the layers above register with the connections once at startup (requests.c
 * requests_register), so that conn.c, the transport, names none of them. */
struct conn_handlers {
        /* One whole message from `c`. */
        void (*message)(struct agent *a, struct conn *c, uint16_t type, uint32_t id,
                        const uint8_t *body, size_t len);
        /* Cancels every request `c` has in flight, sending nothing. */
        void (*drop_inflight)(struct agent *a, struct conn *c);
        /* `c`'s output fell below its high water: resume what feeds it. */
        void (*drained)(struct agent *a, struct conn *c);
};
void conn_set_handlers(const struct conn_handlers *h);

struct conn *conn_new(struct agent *a, int fd, enum transport kind);
void conn_close(struct agent *a, struct conn *c, const char *why);
/* Flushes connections with new output and parses requests left in read buffers.
 * Returns true if work remains (poll without sleeping). */
bool conn_flush_dirty(struct agent *a);
/* Marks output appended to `c` so the loop flushes it. */
void conn_touch(struct conn *c);
bool conn_over_high_water(const struct conn *c);
/* Cancels every in-flight request of `c` without sending anything (disconnect, a new peer). */
void conn_drop_inflight(struct agent *a, struct conn *c);
void conn_send_error(struct agent *a, struct conn *c, uint32_t id, const char *code,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
