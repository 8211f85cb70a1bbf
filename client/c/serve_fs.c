/* A filesystem-only pause's guest side (fs_snapshot.h) over one of cellvm
 * serve's multiplexed agent connections. */
#include <errno.h>

#include "buf.h"
#include "fs_snapshot.h"
#include "serve.h"

static int mux_begin(void *ud, uint16_t type, struct cv_buf *body, void **req)
{
        struct mux_req *r;
        int rc = mux_open(ud, &r);
        if (rc < 0)
                return rc;
        if ((rc = mux_send_buf(r, type, body)) < 0) {
                mux_close_req(r);
                return rc;
        }
        *req = r;
        return 0;
}

static int mux_more(void *req, uint16_t type, struct cv_buf *body)
{
        return mux_send_buf(req, type, body);
}

static int mux_take(void *req, int timeout_ms, struct cvc_event *ev)
{
        int rc = mux_next(req, timeout_ms, ev);
        return rc == -ENODATA ? -ECONNRESET : rc;
}

static void mux_end(void *req)
{
        mux_close_req(req);
}

static struct cfs_link link_of(struct sandbox *s)
{
        return (struct cfs_link){
            .ud = &s->mux, .begin = mux_begin, .more = mux_more, .next = mux_take, .end = mux_end};
}

int serve_fs_pack(void *ud, const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
        struct cfs_link l = link_of(ud);
        return cfs_pack(&l, path, max_bytes, err, errlen);
}

int serve_fs_unpack(struct sandbox *s, const char *path, char *err, size_t errlen)
{
        struct cfs_link l = link_of(s);
        return cfs_unpack(&l, path, err, errlen);
}
