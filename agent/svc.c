/* The files and commands services: in-flight bookkeeping, dispatch, errno replies. */

#include "svc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cbor_util.h"
#include "conn.h"
#include "log.h"
#include "msgtypes.h"
#include "port_data.h"
#include "writer.h"

void svc_attach(struct conn *c, struct svc_req *r, uint32_t id, const struct svc_ops *ops)
{
        r->conn = c;
        r->id = id;
        r->ops = ops;
        r->next = c->svcs;
        c->svcs = r;
        c->ninflight++;
}

void svc_detach(struct svc_req *r)
{
        struct conn *c = r->conn;
        if (!c)
                return;
        for (struct svc_req **pp = &c->svcs; *pp; pp = &(*pp)->next) {
                if (*pp == r) {
                        *pp = r->next;
                        c->ninflight--;
                        break;
                }
        }
        r->conn = NULL;
        r->next = NULL;
}

struct svc_req *svc_find(struct conn *c, uint32_t id)
{
        for (struct svc_req *r = c->svcs; r; r = r->next)
                if (r->id == id)
                        return r;
        return NULL;
}

void svc_drop_all(struct agent *a, struct conn *c)
{
        while (c->svcs)
                c->svcs->ops->cancel(a, c->svcs, false);
}

void svc_resume_all(struct agent *a, struct conn *c)
{
        struct svc_req *next;
        for (struct svc_req *r = c->svcs; r && !conn_over_high_water(c); r = next) {
                next = r->next; /* resume may finish and free `r` */
                if (r->ops->resume)
                        r->ops->resume(a, r);
        }
}

void svc_data(struct agent *a, struct conn *c, uint16_t type, uint32_t id, const uint8_t *body,
              size_t len)
{
        struct svc_req *r = svc_find(c, id);
        if (!r || !r->ops->data) {
                /* The upload or tunnel ended early (an error, a CANCEL): the client's remaining
                 * chunks were already on their way. */
                log_debug("conn %u: %s for id %u, not a request in flight: dropped", c->num,
                          cv_msg_type_name(type), id);
                return;
        }
        /* A tunnel's bytes, most of what crosses the connection: no tree, no copy. */
        struct cv_port_data pd;
        if (type == CV_MSG_PORT_DATA && r->ops->port_data &&
            cv_port_data_decode(body, len, &pd) == 0) {
                r->ops->port_data(a, r, &pd);
                return;
        }
        cbor_item_t *item = NULL;
        int rc = cv_body_parse(body, len, &item);
        if (rc < 0) {
                conn_send_error(a, c, id, rc == -ENOMEM ? CV_ERR_INTERNAL : CV_ERR_BAD_REQUEST,
                                "%s: the body is not a CBOR map", cv_msg_type_name(type));
                r->ops->cancel(a, r, false);
                return;
        }
        r->ops->data(a, r, type, item);
        cbor_decref(&item);
}

void svc_reply_ok_empty(struct conn *c, uint32_t id)
{
        int rc = cv_out_msg(&c->out, CV_MSG_OK, 0, id, NULL, 0);
        if (rc < 0)
                log_error("conn %u: id %u: queueing OK: %s", c->num, id, strerror(-rc));
        conn_touch(c);
}

/* Wire codes for file-system errors (section 9). */
static const char *errno_code(int err)
{
        switch (err) {
        case ENOENT:
                return CV_ERR_NOT_FOUND;
        case EACCES:
        case EPERM:
        case EROFS:
                return "permission_denied";
        case ENOSPC:
        case EDQUOT:
                return "no_space";
        case EEXIST:
        case ENOTEMPTY:
        case ENOTDIR:
        case EISDIR:
        case ENAMETOOLONG:
        case ELOOP:
        case EINVAL:
        case EXDEV:
        case EBUSY:
                return "invalid_argument";
        default:
                return "io_error";
        }
}

void svc_send_errno(struct agent *a, struct conn *c, uint32_t id, int err, const char *what,
                    const char *path)
{
        const char *name = strerrorname_np(err);
        conn_send_error(a, c, id, errno_code(err), "%s %.3800s: %s (%s)", what, path, strerror(err),
                        name ? name : "?");
}
