/* Timer thread flushing the executor's Python streams (see output_flusher.h). */
#include "output_flusher.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

/*
 * `active` is read without the lock on the fast path; `idle`, `stop` and the
 * condition variable are under `lock`. No fd is used, so a cell sees no extra
 * open files. The mutex and condition calls on these normal (non-robust,
 * non-error-checking) objects, and CLOCK_MONOTONIC reads, cannot fail, so their
 * results are not checked.
 */
static struct {
        pthread_t thread;
        int running; /* thread started (GIL-protected) */
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */
        int idle;            /* the thread waits for a cell to start */
        int stop;
        atomic_int active; /* a cell is running */
        PyObject *flush;   /* strong reference, released at stop */
        long interval_ns;
} flusher = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Runs with the thread's own thread state `ts` (see flusher_main). */
static void call_flush(PyThreadState *ts)
{
        PyEval_RestoreThread(ts);
        PyObject *r = PyObject_CallNoArgs(flusher.flush);
        if (r == NULL)
                PyErr_Clear(); /* nowhere to report it; the next message flushes again */
        Py_XDECREF(r);
        PyEval_SaveThread();
}

static void deadline_after(struct timespec *ts, long ns)
{
        clock_gettime(CLOCK_MONOTONIC, ts);
        ts->tv_nsec += ns % 1000000000L;
        ts->tv_sec += ns / 1000000000L + ts->tv_nsec / 1000000000L;
        ts->tv_nsec %= 1000000000L;
}

static void *flusher_main(void *arg)
{
        (void)arg;
        /* One thread state for the thread's life, made and freed with the GIL
         * held. A PyGILState_Ensure/Release per flush would allocate and free
         * a thread state each time, the free after the GIL is dropped: with
         * tracemalloc's hooks installed or being removed by a cell
         * (tracemalloc.start()/stop()), that raced and crashed the executor
         * (SIGSEGV in this thread, about once in 40 start/stop cells). */
        PyGILState_STATE g = PyGILState_Ensure();
        PyThreadState *ts = PyEval_SaveThread();
        pthread_mutex_lock(&flusher.lock);
        while (!flusher.stop) {
                if (!atomic_load(&flusher.active)) {
                        flusher.idle = 1;
                        while (flusher.idle && !flusher.stop)
                                pthread_cond_wait(&flusher.cond, &flusher.lock);
                        flusher.idle = 0;
                        continue;
                }
                /* Sleep one interval; only a stop request cuts it short. */
                struct timespec until;
                deadline_after(&until, flusher.interval_ns);
                int rc = 0;
                while (!flusher.stop && rc != ETIMEDOUT)
                        rc = pthread_cond_timedwait(&flusher.cond, &flusher.lock, &until);
                if (flusher.stop || !atomic_load(&flusher.active))
                        continue;
                pthread_mutex_unlock(&flusher.lock);
                call_flush(ts);
                pthread_mutex_lock(&flusher.lock);
        }
        pthread_mutex_unlock(&flusher.lock);
        PyEval_RestoreThread(ts);
        PyGILState_Release(g);
        return NULL;
}

/* fork() in a cell: the child has no flusher thread and must find the lock free. */
static void before_fork(void)
{
        pthread_mutex_lock(&flusher.lock);
}

static void after_fork_parent(void)
{
        pthread_mutex_unlock(&flusher.lock);
}

static void after_fork_child(void)
{
        pthread_mutex_unlock(&flusher.lock);
        flusher.running = 0;
}

static void join_thread(void)
{
        pthread_mutex_lock(&flusher.lock);
        flusher.stop = 1;
        pthread_cond_signal(&flusher.cond);
        pthread_mutex_unlock(&flusher.lock);
        pthread_join(flusher.thread, NULL);
}

static int init_once(void)
{
        static int done;
        if (done)
                return 0;
        pthread_condattr_t attr;
        int rc = pthread_condattr_init(&attr);
        if (rc != 0)
                return -rc;
        rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        if (rc == 0)
                rc = pthread_cond_init(&flusher.cond, &attr);
        pthread_condattr_destroy(&attr);
        if (rc == 0)
                rc = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        if (rc != 0)
                return -rc;
        done = 1;
        return 0;
}

int output_flusher_start(PyObject *flush, double interval)
{
        if (flusher.running)
                return -EALREADY;
        int rc = init_once();
        if (rc < 0)
                return rc;
        long ns = (long)(interval * 1e9);
        flusher.interval_ns = ns < 1000000 ? 1000000 : ns;
        flusher.stop = 0;
        flusher.idle = 0;
        atomic_store(&flusher.active, 0);
        Py_INCREF(flush);
        flusher.flush = flush;
        /* The thread must not take signals meant for the main thread (SIGINT). */
        sigset_t all, old;
        sigfillset(&all);
        rc = pthread_sigmask(SIG_SETMASK, &all, &old);
        if (rc == 0) {
                rc = pthread_create(&flusher.thread, NULL, flusher_main, NULL);
                int rc_mask = pthread_sigmask(SIG_SETMASK, &old, NULL);
                if (rc == 0 && rc_mask != 0) {
                        join_thread();
                        rc = rc_mask;
                }
        }
        if (rc != 0) {
                Py_CLEAR(flusher.flush);
                return -rc;
        }
        flusher.running = 1;
        return 0;
}

void output_flusher_set_active(int active)
{
        atomic_store(&flusher.active, active ? 1 : 0);
        if (!active || !flusher.running)
                return;
        pthread_mutex_lock(&flusher.lock);
        if (flusher.idle) {
                flusher.idle = 0;
                pthread_cond_signal(&flusher.cond);
        }
        pthread_mutex_unlock(&flusher.lock);
}

void output_flusher_stop(void)
{
        if (!flusher.running)
                return;
        /* The thread may be waiting for the GIL in call_flush(). */
        Py_BEGIN_ALLOW_THREADS join_thread();
        Py_END_ALLOW_THREADS flusher.running = 0;
        Py_CLEAR(flusher.flush);
}
