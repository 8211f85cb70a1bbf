/* cellvm serve's warm pool (--pool N): clones restored ahead of create, each
 * with its own generation (the restore's NEW_GENERATION), warmed by a cell
 * in a context made for it and removed after, so that a create costs a
 * deadline and a first cell runs code the VM has translated already (its
 * egress proxy is up too, without rules until the create's). The
 * user's contexts never saw the warm-up: the default context's namespace
 * and execution count are untouched. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "registry.h"
#include "serve.h"
#include "serve_egress.h"

/* A pooled clone's deadline; it is replaced before it comes near. */
#define POOL_LIFETIME_S 900.0
#define POOL_RECYCLE_MS (600 * 1000)

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct sandbox *ready[64];
        unsigned n, want;
        bool stopping;
        pthread_t filler;
        bool started;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* The warm-up: a throwaway Python context runs a cell, then goes. */
static int warm(struct sandbox *s, char *err, size_t errlen)
{
        struct cv_buf b;
        cbor_item_t *reply = NULL;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "language");
        cv_enc_cstr(&b, "python");
        int rc = mux_call(&s->mux, CV_MSG_CONTEXT_CREATE, &b, 60000, &reply, err, errlen);
        cv_buf_free(&b);
        char *ctx = NULL;
        if (rc == 0 && cv_map_dup_str(reply, "id", &ctx) < 0) {
                snprintf(err, errlen, "CONTEXT_CREATE gave no id");
                rc = -EPROTO;
        }
        if (reply)
                cbor_decref(&reply);
        if (rc < 0)
                return rc;
        cv_buf_init(&b);
        cv_enc_map(&b, 2);
        cv_enc_cstr(&b, "code");
        cv_enc_cstr(&b, "1 + 1");
        cv_enc_cstr(&b, "context");
        cv_enc_cstr(&b, ctx);
        rc = mux_call(&s->mux, CV_MSG_EXECUTE, &b, 60000, NULL, err, errlen);
        cv_buf_free(&b);
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "context");
        cv_enc_cstr(&b, ctx);
        int rm = mux_call(&s->mux, CV_MSG_CONTEXT_REMOVE, &b, 60000, NULL, err, errlen);
        cv_buf_free(&b);
        free(ctx);
        if (rc < 0 || rm < 0)
                return rc < 0 ? rc : rm;
        /* The default context's own part of a first cell (its reseed for this
         * generation, its process's first run of the cell path), taken by an
         * empty cell: as in IPython, one leaves no history and no count. */
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "code");
        cv_enc_cstr(&b, "");
        rc = mux_call(&s->mux, CV_MSG_EXECUTE, &b, 60000, NULL, err, errlen);
        cv_buf_free(&b);
        return rc;
}

static void discard(struct sandbox *s)
{
        pthread_mutex_lock(&serve.life);
        serve_stop_vm(s);
        pthread_mutex_unlock(&serve.life);
        serve_put(s);
}

static void *filler(void *arg)
{
        (void)arg;
        unsigned failures = 0;
        pthread_mutex_lock(&pool.lock);
        while (!pool.stopping) {
                /* The oldest pooled clone is replaced before its deadline nears. */
                if (pool.n && creg_now_ms() - pool.ready[0]->started_ms > POOL_RECYCLE_MS) {
                        struct sandbox *old = pool.ready[0];
                        memmove(pool.ready, pool.ready + 1, --pool.n * sizeof(pool.ready[0]));
                        pthread_mutex_unlock(&pool.lock);
                        discard(old);
                        pthread_mutex_lock(&pool.lock);
                        continue;
                }
                if (pool.n >= pool.want) {
                        struct timespec until;
                        clock_gettime(CLOCK_REALTIME, &until);
                        until.tv_sec += 5;
                        pthread_cond_timedwait(&pool.cond, &pool.lock, &until);
                        continue;
                }
                pthread_mutex_unlock(&pool.lock);
                char err[512];
                struct sandbox *s = NULL;
                int rc = serve_restore(POOL_LIFETIME_S, &s, err, sizeof(err));
                /* Its egress too (without rules yet): a create only sets them. */
                if (rc == 0 && ((rc = warm(s, err, sizeof(err))) < 0 ||
                                (rc = serve_egress_start(s, NULL, err, sizeof(err))) < 0)) {
                        discard(s);
                        s = NULL;
                }
                if (rc < 0) {
                        fprintf(stderr, "cellvm serve: the pool could not add a sandbox: %s\n",
                                err);
                        /* back off: 1, 2, 4 ... 30 s */
                        unsigned wait = failures < 5 ? 1u << failures : 30;
                        failures++;
                        pthread_mutex_lock(&pool.lock);
                        struct timespec until;
                        clock_gettime(CLOCK_REALTIME, &until);
                        until.tv_sec += wait;
                        while (!pool.stopping &&
                               pthread_cond_timedwait(&pool.cond, &pool.lock, &until) == 0)
                                ;
                        continue;
                }
                failures = 0;
                pthread_mutex_lock(&pool.lock);
                if (pool.stopping || pool.n >= pool.want) { /* or no longer wanted */
                        pthread_mutex_unlock(&pool.lock);
                        discard(s);
                        pthread_mutex_lock(&pool.lock);
                        continue;
                }
                pool.ready[pool.n++] = s;
        }
        pthread_mutex_unlock(&pool.lock);
        return NULL;
}

int serve_pool_start(unsigned n)
{
        if (n == 0)
                return 0;
        if (n > sizeof(pool.ready) / sizeof(pool.ready[0]))
                return -EINVAL;
        pool.want = n;
        int rc = pthread_create(&pool.filler, NULL, filler, NULL);
        if (rc != 0)
                return -rc;
        pool.started = true;
        return 0;
}

struct sandbox *serve_pool_take(void)
{
        pthread_mutex_lock(&pool.lock);
        struct sandbox *s = NULL;
        /* The newest: its translations are the freshest. */
        if (pool.n)
                s = pool.ready[--pool.n];
        if (serve_single_enabled())
                pool.want = 0; /* --single: its one sandbox is handed out */
        pthread_mutex_unlock(&pool.lock);
        return s;
}

void serve_pool_refill(void)
{
        pthread_mutex_lock(&pool.lock);
        pthread_cond_signal(&pool.cond);
        pthread_mutex_unlock(&pool.lock);
}

unsigned serve_pool_size(void)
{
        pthread_mutex_lock(&pool.lock);
        unsigned n = pool.n;
        pthread_mutex_unlock(&pool.lock);
        return n;
}

void serve_pool_stop(void)
{
        pthread_mutex_lock(&pool.lock);
        pool.stopping = true;
        pthread_cond_broadcast(&pool.cond);
        pthread_mutex_unlock(&pool.lock);
        if (pool.started)
                pthread_join(pool.filler, NULL);
        pthread_mutex_lock(&pool.lock);
        while (pool.n) {
                struct sandbox *s = pool.ready[--pool.n];
                pthread_mutex_unlock(&pool.lock);
                discard(s);
                pthread_mutex_lock(&pool.lock);
        }
        pthread_mutex_unlock(&pool.lock);
}
