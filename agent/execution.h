/* EXECUTE requests (execution.c): relaying an executor's output to the client, the terminal
 * reply. Their queue is their context's (context.h). */
#ifndef CELLVM_AGENT_EXECUTION_H
#define CELLVM_AGENT_EXECUTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct agent;
struct conn;
struct context;

enum exec_end { END_NORMAL, END_TIMEOUT, END_CANCELLED };

/* One EXECUTE request. */
struct exec {
        struct exec *queue_next; /* in its context's queue */
        struct exec *conn_next;  /* in its connection's in-flight list */
        struct conn *conn;       /* NULL once the client is gone: output is dropped */
        struct context *ctx;
        uint32_t client_id;
        uint32_t internal_id;
        struct cv_buf xbody; /* the X_EXECUTE body's pairs (without the map header) */
        unsigned xpairs;     /* how many */
        uint64_t timeout_ns; /* 0 = none */
        uint64_t deadline;   /* monotonic ns, while running */
        enum exec_end end;
        bool running;
        bool input_seen;          /* EXEC_INPUT relayed: output from now on is the cell's */
        bool interrupt_pending;   /* INTERRUPT came before EXEC_INPUT: signal at EXEC_INPUT */
        uint64_t execution_count; /* from EXEC_INPUT */
        uint64_t output_bytes;    /* stdout + stderr bytes of the cell, to apply output_max */
        bool output_truncated;    /* the truncation notice went out; the rest is dropped */
};

void exec_finish(struct agent *a, struct exec *e, const uint8_t *xend_body, size_t len);
void exec_died(struct agent *a, struct exec *e, const char *why);
void exec_free(struct exec *e);
void exec_relay(struct exec *e, uint16_t type, const uint8_t *body, size_t len);
/* A STREAM the executor sent itself (the JavaScript driver's console output): relayed
 * under the same per-execution output cap as the pipes' bytes. */
void exec_stream_message(struct agent *a, struct exec *e, const uint8_t *body, size_t len);
void exec_stream(struct agent *a, struct context *ctx, int which, const uint8_t *p, size_t n,
                 bool final);
void exec_detach_conn(struct exec *e);

#endif
