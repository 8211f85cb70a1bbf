/* cellvm serve --single: the server of one sandbox, its pod's
 * (docs/KUBERNETES.md). The sandbox is restored and warmed at start, through
 * the pool (one clone, not refilled once taken), so a claim of the pod costs
 * a deadline, not a restore; the server is ready only then. The first create
 * gets it; any other is refused as E2B refuses one past a team's limit (429).
 * Once that sandbox ended, /health is 503 again: the pod served its one. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "serve.h"

static struct {
        pthread_mutex_t lock;
        bool on, claimed;
        bool handed_out; /* the claimed create succeeded: the sandbox is in the table */
} single = {.lock = PTHREAD_MUTEX_INITIALIZER};

void serve_single_enable(void)
{
        single.on = true;
}

bool serve_single_enabled(void)
{
        return single.on;
}

int serve_single_claim(void)
{
        if (!single.on)
                return 0;
        pthread_mutex_lock(&single.lock);
        int rc = single.claimed ? -EAGAIN : 0;
        single.claimed = true;
        pthread_mutex_unlock(&single.lock);
        return rc;
}

void serve_single_unclaim(void)
{
        pthread_mutex_lock(&single.lock);
        single.claimed = false;
        pthread_mutex_unlock(&single.lock);
}

void serve_single_handed_out(void)
{
        pthread_mutex_lock(&single.lock);
        single.handed_out = true;
        pthread_mutex_unlock(&single.lock);
}

static bool handed_out(void)
{
        pthread_mutex_lock(&single.lock);
        bool h = single.handed_out;
        pthread_mutex_unlock(&single.lock);
        return h;
}

static bool claimed(void)
{
        pthread_mutex_lock(&single.lock);
        bool c = single.claimed;
        pthread_mutex_unlock(&single.lock);
        return c;
}

static unsigned live_sandboxes(void)
{
        struct sandbox **all = NULL;
        size_t n = 0;
        if (serve_list(&all, &n) < 0)
                return 1; /* out of memory: assume it lives */
        for (size_t i = 0; i < n; i++)
                serve_put(all[i]);
        free(all);
        return (unsigned)n;
}

static void nap(void)
{
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* The pool's thread restores and warms; this waits for it (or a create that
 * came first), taking the server's signals meanwhile: 0, or the signal that
 * ended the wait in *sig. */
int serve_single_wait_warm(const sigset_t *signals, int *sig)
{
        *sig = 0;
        while (!serve_pool_size() && !claimed()) {
                struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000};
                int s = sigtimedwait(signals, NULL, &ts);
                if (s > 0) {
                        *sig = s;
                        return -ECANCELED;
                }
        }
        return 0;
}

void *serve_single_watch(void *arg)
{
        (void)arg;
        /* Set by the create once its sandbox is in the table, so a sandbox
         * created and ended between two looks still counts as served. */
        while (!serve.stopping && !(handed_out() && live_sandboxes() == 0))
                nap();
        if (!serve.stopping) {
                serve.ready = false;
                fputs("cellvm serve: the pod's sandbox ended: /health is 503 from now on\n",
                      stderr);
        }
        return NULL;
}
