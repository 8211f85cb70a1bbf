/*
 * The files, commands and ports services' in-flight requests (svc.c;
 * docs/PROTOCOL.md sections 9, 10, 12): requests that stay in flight (uploads,
 * downloads, directory watches, commands, tunnels) hang off their connection as
 * a `struct svc_req`, so CANCEL, duplicate ids, disconnects and output flow
 * control treat them like executions.
 */
#ifndef CELLVM_AGENT_SVC_H
#define CELLVM_AGENT_SVC_H

#include <cbor.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent;
struct conn;
struct svc_req;
struct cv_port_data;

struct svc_ops {
        const char *name; /* for logs */
        /* Ends the request: with ERROR cancelled when `notify`, silently on disconnect. Frees it.
         */
        void (*cancel)(struct agent *a, struct svc_req *r, bool notify);
        /* The connection's output went below its high water: produce more (may be NULL). */
        void (*resume)(struct agent *a, struct svc_req *r);
        /* A continuation message (FILE_DATA) for this request (may be NULL). */
        void (*data)(struct agent *a, struct svc_req *r, uint16_t type, const cbor_item_t *body);
        /* PORT_DATA of the common shape, decoded in place (port_data.h), instead of `data`
         * (may be NULL). */
        void (*port_data)(struct agent *a, struct svc_req *r, const struct cv_port_data *pd);
};

/* Embedded in each service's request state. */
struct svc_req {
        struct svc_req *next; /* in conn->svcs */
        struct conn *conn;
        uint32_t id;
        const struct svc_ops *ops;
};

void svc_attach(struct conn *c, struct svc_req *r, uint32_t id, const struct svc_ops *ops);
/* Removes `r` from its connection's list (no-op if detached). */
void svc_detach(struct svc_req *r);
struct svc_req *svc_find(struct conn *c, uint32_t id);
/* Cancels every service request of `c` without replying (disconnect). */
void svc_drop_all(struct agent *a, struct conn *c);
void svc_resume_all(struct agent *a, struct conn *c);
/* A continuation message (FILE_DATA, PORT_DATA) of request `id`; dropped if that request
 * already ended. */
void svc_data(struct agent *a, struct conn *c, uint16_t type, uint32_t id, const uint8_t *body,
              size_t len);
/* OK {} for request `id`. */
void svc_reply_ok_empty(struct conn *c, uint32_t id);
/* ERROR for a failed file operation: code from errno, message "what path: strerror (ENAME)". */
void svc_send_errno(struct agent *a, struct conn *c, uint32_t id, int err, const char *what,
                    const char *path);

#endif
