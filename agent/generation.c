/*
 * Snapshots of the guest (docs/PROTOCOL.md section 11, docs/SNAPSHOTS.md).
 *
 * SNAPSHOT_PREPARE: the host is about to save the VM. From its OK on, this
 * guest, and every copy restored from the snapshot, runs no more user work
 * until NEW_GENERATION gives it fresh entropy, the host's clock and a
 * generation number of its own: until then requests that run user code or
 * touch files or commands get `no_generation`, and queued cells wait.
 *
 * The epoch counts what each copy must make its interpreters redo: every new
 * generation and every VM-fork notice of the kernel (vmfork.c) bumps it.
 * X_EXECUTE and Z_SPAWN carry it; an executor or the zygote that sees an
 * epoch other than its own reseeds what a copy shares (random generators,
 * cached names) before it runs the cell (section 8).
 */

#include "generation.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/entropy.h"
#include "agent.h"
#include "cbor_util.h"
#include "conn.h"
#include "context.h"
#include "log.h"
#include "msgtypes.h"
#include "svc.h"
#include "system.h"
#include "vmfork.h"
#include "writer.h"

/* Fresh entropy NEW_GENERATION must bring: a CRNG's worth (256 bits). */
#define GENERATION_ENTROPY_MIN 32u

/* Starts what waited for the generation: the queued cells of every context. */
static void resume_queued(struct agent *a)
{
        struct context *next;
        for (struct context *ctx = a->contexts; ctx; ctx = next) {
                next = ctx->next;
                context_start_next(a, ctx);
        }
}

void system_snapshot_prepare_request(struct agent *a, struct conn *c, uint32_t id,
                                     const cbor_item_t *body)
{
        (void)body;
        /* The host closes this connection after the OK and before it pauses the VM. Its
         * other requests end now, as at a disconnect, so that nothing more is written
         * to it: on the serial port, bytes still queued would reach the first peer of
         * every restored copy ahead of its HELLO reply. */
        if (c->ninflight)
                log_info("conn %u: SNAPSHOT_PREPARE ends its %u requests in flight", c->num,
                         c->ninflight);
        conn_drop_inflight(a, c);
        a->awaiting_generation = true;
        log_info("conn %u: snapshot prepared at generation %llu: user work waits for "
                 "NEW_GENERATION",
                 c->num, (unsigned long long)a->generation);
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, 1);
        cv_enc_cstr(&c->out, "generation");
        cv_enc_uint(&c->out, a->generation);
        if (cv_out_end(&c->out, mark, CV_MSG_OK, id) < 0)
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "encoding the reply");
        conn_touch(c);
}

/* Mixes `seed` into the pool without crediting it (any user may write /dev/urandom):
 * what a dev-mode agent without CAP_SYS_ADMIN can do. 0 or -errno. */
static int mix_entropy(const uint8_t *seed, size_t len)
{
        int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, seed, len);
        int rc = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
        if (close(fd) < 0 && rc == 0)
                rc = -errno;
        return rc;
}

void system_new_generation_request(struct agent *a, struct conn *c, uint32_t id,
                                   const cbor_item_t *body)
{
        uint64_t generation, realtime_ns;
        const uint8_t *entropy;
        size_t len;
        if (cv_map_get_uint(body, "generation", &generation) < 0 ||
            cv_map_get_uint(body, "realtime_ns", &realtime_ns) < 0) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`generation` and `realtime_ns` must be unsigned integers");
                return;
        }
        if (cv_map_get_bytes(body, "entropy", &entropy, &len) < 0 || len < GENERATION_ENTROPY_MIN ||
            len > ENTROPY_MAX_BYTES) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`entropy` must be %u to %d bytes",
                                GENERATION_ENTROPY_MIN, ENTROPY_MAX_BYTES);
                return;
        }
        if (generation <= a->generation) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "generation %llu is not greater than this guest's, %llu",
                                (unsigned long long)generation, (unsigned long long)a->generation);
                return;
        }
        /* The clock first: the host took it when it sent the request, so every step
         * before this one would put the guest behind. A dev-mode agent's clock is its
         * host's own, which it leaves alone. */
        bool vm = system_under_init();
        struct timespec before;
        clock_gettime(CLOCK_REALTIME, &before);
        int rc = vm ? system_set_realtime(realtime_ns) : 0;
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "set", "CLOCK_REALTIME");
                return;
        }
        rc = entropy_seed(entropy, len);
        uint64_t credited = rc > 0 ? (uint64_t)rc * 8u : 0;
        if (rc == -EPERM && !vm)
                rc = mix_entropy(entropy, len);
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "add entropy to", "/dev/random");
                return;
        }
        uint64_t was = a->generation;
        a->generation = generation;
        a->awaiting_generation = false;
        epoch_advance(a, "NEW_GENERATION");
        int64_t step_ms = 0;
        if (vm)
                step_ms = ((int64_t)realtime_ns -
                           ((int64_t)before.tv_sec * 1000000000ll + before.tv_nsec)) /
                          1000000ll;
        log_info("conn %u: generation %llu (was %llu): %s, %llu bits of entropy credited", c->num,
                 (unsigned long long)generation, (unsigned long long)was,
                 vm ? "clock set" : "clock left alone (dev mode)", (unsigned long long)credited);
        if (vm)
                log_info("conn %u: the clock moved by %lld ms", c->num, (long long)step_ms);
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, 3);
        cv_enc_cstr(&c->out, "generation");
        cv_enc_uint(&c->out, generation);
        cv_enc_cstr(&c->out, "credited_bits");
        cv_enc_uint(&c->out, credited);
        cv_enc_cstr(&c->out, "clock_set");
        cv_enc_bool(&c->out, vm);
        if (cv_out_end(&c->out, mark, CV_MSG_OK, id) < 0)
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "encoding the reply");
        conn_touch(c);
        resume_queued(a);
}
