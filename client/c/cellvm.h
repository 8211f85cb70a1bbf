/*
 * libcellvm: a blocking host-side client for cellvm-agent (docs/PROTOCOL.md).
 *
 * Everything the agent sends is untrusted: frames go through the bounded
 * reader of protocol/, bodies through cvc_event_decode(), which checks every
 * type and length before the caller sees a pointer.
 *
 * All functions return 0 or a negative errno; on failure cvc_errmsg() says
 * what went wrong (an agent ERROR's code and message, or the failing call).
 */
#ifndef CELLVM_CLIENT_H
#define CELLVM_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cbor.h>

#define CVC_VERSION "0.1.0"

struct cvc;

/* --- decoded agent messages ------------------------------------------------- */

/* One entry of a MIME bundle (DISPLAY / RESULT `data`). */
struct cvc_mime {
        const char *mime; /* NUL-terminated copy */
        enum { CVC_MIME_TEXT, CVC_MIME_BYTES, CVC_MIME_OTHER } kind;
        const uint8_t *data; /* text (valid UTF-8, not NUL-terminated) or bytes; NULL for OTHER */
        size_t len;
};

#define CVC_MAX_MIMES 32
#define CVC_MAX_TRACEBACK 512

struct cvc_event {
        uint16_t type; /* CV_MSG_* */
        uint32_t id;
        union {
                struct {
                        uint64_t execution_count;
                } input;
                struct {
                        bool is_stderr;
                        const char *text;
                        size_t len;
                } stream;
                struct {
                        uint64_t execution_count; /* RESULT only */
                        size_t nmime;
                        struct cvc_mime mime[CVC_MAX_MIMES];
                } display; /* DISPLAY and RESULT */
                struct {
                        const char *name, *value;
                        size_t name_len, value_len;
                        size_t ntb;
                        const char *tb[CVC_MAX_TRACEBACK];
                        size_t tb_len[CVC_MAX_TRACEBACK];
                } error; /* EXEC_ERROR */
                struct {
                        const char *code, *message;
                        size_t code_len, message_len;
                } fail; /* ERROR */
        } u;
        cbor_item_t *root; /* OK: the body map, for request-specific fields */
        char *owned;       /* storage for the mime names */
};

/*
 * Decodes one agent message of `type` with `body` (len bytes) into `ev`.
 * Pointers in `ev` borrow from `ev->root`; release with cvc_event_free().
 * Returns 0, -EINVAL / -EPROTOTYPE (malformed body or missing fields) or
 * -ENOMEM. Unknown types decode to just `root`.
 */
int cvc_event_decode(uint16_t type, uint32_t id, const uint8_t *body, size_t len,
                     struct cvc_event *ev);
void cvc_event_free(struct cvc_event *ev);

/* --- connection ------------------------------------------------------------- */

/* Connects to "unix:PATH" or "tcp:HOST:PORT" and performs the HELLO handshake
 * (re-sent while unanswered, as cvc_connect_ex() does; no time limit). */
int cvc_connect(const char *addr, struct cvc **out);

#define CVC_HELLO_RESEND_MS 500 /* cvc_connect(): first re-send of an unanswered HELLO */
#define CVC_HELLO_RESEND_MAX_MS 8000

/* How cvc_connect_ex() waits for the agent (a VM that is still booting). */
struct cvc_connect_opts {
        int timeout_ms;      /* for the HELLO reply; <= 0: no limit */
        int hello_resend_ms; /* re-send an unanswered HELLO after this, doubling up to
                                CVC_HELLO_RESEND_MAX_MS; <= 0: send once */
        /* Polled while waiting (~every 50 ms); returning 0 gives up with -ECHILD. */
        int (*still_alive)(void *ud);
        /* Whether a failed connect (negative errno) is retried, within the
         * deadline and while still_alive; NULL: -ECONNREFUSED is (a VMM binds
         * its socket a moment before it listens). */
        int (*retry_connect)(int err, void *ud);
        void *ud;
};

/* cvc_connect() with a bounded, retried HELLO: over virtio-serial a HELLO sent
 * while the guest agent (re)opens its port is lost, so it is re-sent until
 * answered (docs/VMM.md). `opts` NULL behaves as cvc_connect(). On failure
 * `*out` is still set (read cvc_errmsg, then cvc_close). -ETIMEDOUT, -ECHILD,
 * or as cvc_connect. */
int cvc_connect_ex(const char *addr, const struct cvc_connect_opts *opts, struct cvc **out);
/* The HELLO handshake of cvc_connect_ex over `fd`, a stream already connected
 * to an agent (e.g. before its VM runs: a restore); the connection owns `fd`
 * from then on, even on failure (read cvc_errmsg, then cvc_close). */
int cvc_connect_fd(int fd, const struct cvc_connect_opts *opts, struct cvc **out);
void cvc_close(struct cvc *c);
/* The connection's socket, for a caller that multiplexes it itself (cellvm
 * serve): it then reads only through cvc_next_event, from one thread. */
int cvc_fd(const struct cvc *c);

/* The reason of the last failure on `c` (never NULL). */
const char *cvc_errmsg(const struct cvc *c);
/* The HELLO reply body (borrowed, valid until cvc_close or cvc_rehello). */
const cbor_item_t *cvc_hello(const struct cvc *c);
/* HELLO again on an open connection (allowed: docs/PROTOCOL.md section 3),
 * e.g. until its boot stamps say the executor is ready; the reply replaces
 * cvc_hello's. As cvc_call_timeout. */
int cvc_rehello(struct cvc *c, int timeout_ms);

/* PING: round trip; `*rtt_ns` gets the measured time if not NULL. */
int cvc_ping(struct cvc *c, uint64_t *rtt_ns);

/* Sends request `type` with an already-encoded CBOR body and waits for its
 * terminal message. On OK, `*reply` (if not NULL) gets the body (cbor_decref it).
 * An agent ERROR returns -EREMOTEIO with cvc_errmsg() = "code: message". */
int cvc_call(struct cvc *c, uint16_t type, const uint8_t *body, size_t len, cbor_item_t **reply);

/* cvc_call() waiting at most `timeout_ms` (< 0: no limit) for the answer:
 * -ETIMEDOUT after that (a late answer is skipped by later calls). */
int cvc_call_timeout(struct cvc *c, uint16_t type, const uint8_t *body, size_t len, int timeout_ms,
                     cbor_item_t **reply);

struct cv_buf;
/* cvc_call() with a body encoded by the cv_enc_* helpers (protocol/cbor_util.h)
 * into `b`; an encoding error in `b` is reported without sending. */
int cvc_call_buf(struct cvc *c, uint16_t type, struct cv_buf *b, cbor_item_t **reply);

/* --- building blocks for streaming requests (files.c, the CLI) --- */

/* A fresh request id for this connection. */
uint32_t cvc_new_id(struct cvc *c);
/* Sends one message (chunked if needed) and waits until it is written. */
int cvc_send(struct cvc *c, uint16_t type, uint32_t id, const uint8_t *body, size_t len);
/* Waits for the next agent message; `timeout_ms` < 0 waits forever. Returns 1
 * with `*ev` decoded (free it), 0 on timeout or EINTR, or a negative errno. */
int cvc_next_event(struct cvc *c, int timeout_ms, struct cvc_event *ev);
/* Sets the connection's error text; returns `rc`. */
int cvc_fail(struct cvc *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records an agent ERROR event as the connection's error; returns -EREMOTEIO. */
int cvc_remote_error(struct cvc *c, const struct cvc_event *ev);

/* --- files and commands (files.c) --- */

/* Uploads local file `local` to `remote` (atomic on the guest side). */
int cvc_put(struct cvc *c, const char *local, const char *remote);
/* Downloads `remote` into `local` (written to a temporary file, then renamed). */
int cvc_get(struct cvc *c, const char *remote, const char *local);
/* Lists `remote` as `ls -l` would, one entry a line. */
int cvc_ls(struct cvc *c, const char *remote, FILE *out);
/* Runs a shell command, relaying its output; `*exit_code` gets its status
 * (128 + signal number when a signal ended it, as shells report). */
int cvc_sh(struct cvc *c, const char *cmd, uint64_t timeout_ms, int *exit_code);

/* --- execution -------------------------------------------------------------- */

struct cvc_exec_opts {
        const char *code;
        const char *context;     /* NULL: the default context */
        const char *const *envs; /* NULL-terminated "KEY=VALUE" list, or NULL */
        uint64_t timeout_ms;     /* 0: none */
        /* Set asynchronously (e.g. from a SIGINT handler) to interrupt the cell. */
        volatile sig_atomic_t *interrupt;
};

/* Called for every non-terminal message of the execution, in order. */
typedef int (*cvc_event_fn)(const struct cvc_event *ev, void *ud);

struct cvc_exec_status {
        bool error;               /* an EXEC_ERROR was sent */
        bool timed_out;           /* ended with ERROR{timeout} */
        uint64_t execution_count; /* from the terminal OK */
};

/*
 * Runs a cell. `on_event` sees EXEC_INPUT, STREAM, DISPLAY, RESULT and
 * EXEC_ERROR; a non-zero return from it cancels the request. Returns 0 once
 * the terminal message arrived (check `st`), or a negative errno: -EREMOTEIO
 * for an agent ERROR other than timeout, -ECONNRESET / -EPROTO for a broken
 * connection.
 */
int cvc_execute(struct cvc *c, const struct cvc_exec_opts *opts, cvc_event_fn on_event, void *ud,
                struct cvc_exec_status *st);

#endif
