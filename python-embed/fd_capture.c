/* Capture of fds 1 and 2 in a Python executor (see fd_capture.h). */
#include "fd_capture.h"
#include "stream_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Lowest fd number for the agent's pipes once they leave 1 and 2. */
#define AGENT_PIPE_MIN_FD 4

/* Forwards what fds 1 and 2 receive as it comes. While the agent's pipe of a
 * stream is full, it waits for room there instead of reading more. */
static void *reader_main(void *arg)
{
        (void)arg;
        int full[2] = {0, 0}, hung_up[2] = {0, 0};
        while (!hung_up[0] || !hung_up[1]) {
                struct pollfd p[2];
                for (int i = 0; i < 2; i++) {
                        const struct stream_sink *s = &stream_sinks[i];
                        p[i].fd = hung_up[i] ? -1 : full[i] ? s->out_fd : s->capture_fd;
                        p[i].events = full[i] ? POLLOUT : POLLIN; /* poll skips fd -1 */
                }
                if (poll(p, 2, -1) < 0)
                        continue; /* EINTR cannot happen (signals blocked); ENOMEM: retry */
                for (int i = 0; i < 2; i++) {
                        if (p[i].revents == 0)
                                continue;
                        if (!full[i] && !(p[i].revents & POLLIN)) {
                                hung_up[i] = 1; /* no writer left: fd closed in a cell */
                                continue;
                        }
                        /* Undeliverable output (the agent is gone) is dropped. */
                        full[i] = stream_sink_flush(&stream_sinks[i]) == -EAGAIN;
                }
        }
        return NULL;
}

/* fork() in a cell: the child has no reader and must find the locks free; it
 * leaves the pipes to the parent's reader and writes its text straight out. */
static void before_fork(void)
{
        pthread_mutex_lock(&stream_sinks[0].lock);
        pthread_mutex_lock(&stream_sinks[1].lock);
}

static void after_fork_parent(void)
{
        pthread_mutex_unlock(&stream_sinks[1].lock);
        pthread_mutex_unlock(&stream_sinks[0].lock);
}

static void after_fork_child(void)
{
        stream_sinks[0].capture_fd = stream_sinks[1].capture_fd = -1;
        after_fork_parent();
}

/* A sink's lock for a dying process: the capture thread may be forwarding;
 * wait for it a little (nanosleep and trylock's atomic exchange are safe in a
 * signal handler), never for good. The lock is not released: nothing follows. */
static int lock_for_death(struct stream_sink *s)
{
        for (int i = 0; i < 200; i++) {
                if (pthread_mutex_trylock(&s->lock) == 0)
                        return 1;
                struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000};
                nanosleep(&ms, NULL);
        }
        return 0;
}

/* write() for a dying process on a nonblocking pipe: waits for room a while
 * (poll is safe in a signal handler), never for good. */
static int write_for_death(int fd, const char *p, size_t n)
{
        int waits = 0;
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EAGAIN && waits++ < 20) {
                        struct pollfd out = {.fd = fd, .events = POLLOUT};
                        (void)poll(&out, 1, 100);
                        continue;
                }
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -1;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* A fatal signal: write out what waits, then die of it as before. */
static void on_fatal_signal(int sig)
{
        int saved = errno;
        for (int i = 0; i < 2; i++) {
                struct stream_sink *s = &stream_sinks[i];
                if (!lock_for_death(s) || write_for_death(s->out_fd, s->pending, s->len) < 0)
                        continue;
                s->len = 0;
                char buf[4096];
                ssize_t n; /* a forked child has no capture pipe: EBADF at once */
                while ((n = read(s->capture_fd, buf, sizeof(buf))) > 0)
                        if (write_for_death(s->out_fd, buf, (size_t)n) < 0)
                                break;
        }
        /* SA_RESETHAND restored the default: a fault faults again on return,
         * abort() raises again. */
        (void)sig;
        errno = saved;
}

static int install_fatal_handlers(void)
{
        static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        struct sigaction sa = {.sa_handler = on_fatal_signal, .sa_flags = SA_RESETHAND};
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
                if (sigaction(fatal[i], &sa, NULL) < 0)
                        return -errno;
        return 0;
}

/* Puts a pipe's write end on `fd`; its read end (nonblocking) in *read_fd and a
 * copy of what `fd` was in *saved_fd, both close-on-exec. */
static int capture_one(int fd, int *read_fd, int *saved_fd)
{
        int p[2];
        int saved = fcntl(fd, F_DUPFD_CLOEXEC, AGENT_PIPE_MIN_FD);
        if (saved < 0)
                return -errno;
        if (pipe2(p, O_CLOEXEC) < 0) {
                int e = -errno;
                close(saved);
                return e;
        }
        /* Both nonblocking: the read end to look without waiting, the agent's
         * pipe (only this process holds it now) so that no lock is held while
         * the agent does not read (stream_sink.h). */
        int rc = 0;
        if (fcntl(p[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(saved, F_SETFL, O_NONBLOCK) < 0 ||
            dup2(p[1], fd) < 0)
                rc = -errno;
        close(p[1]);
        if (rc < 0) {
                close(p[0]);
                close(saved);
                return rc;
        }
        *read_fd = p[0];
        *saved_fd = saved;
        return 0;
}

/* Undoes capture_one: `fd` gets the agent's pipe back, blocking again. */
static void release_one(int fd, int read_fd, int saved_fd)
{
        int flags = fcntl(saved_fd, F_GETFL);
        /* Neither can fail: both fds are open. */
        if ((flags >= 0 && fcntl(saved_fd, F_SETFL, flags & ~O_NONBLOCK) < 0) ||
            dup2(saved_fd, fd) < 0)
                return;
        close(saved_fd);
        close(read_fd);
}

/* Points the sinks at the agent's pipes and the capture pipes (or back). */
static void set_sinks(const int out_fd[2], const int capture_fd[2])
{
        before_fork();
        for (int i = 0; i < 2; i++) {
                stream_sinks[i].out_fd = out_fd[i];
                stream_sinks[i].out_nonblocking = capture_fd[i] >= 0;
                stream_sinks[i].capture_fd = capture_fd[i];
        }
        after_fork_parent();
}

int fd_capture_start(const char **step)
{
        static const int std_fds[2] = {1, 2}, none[2] = {-1, -1};
        int read_fd[2], saved_fd[2];
        /* Registered first: neither can harm an executor left uncaptured. */
        *step = "register fork handlers";
        int rc = -pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        if (rc < 0)
                return rc;
        *step = "fatal signal handlers";
        rc = install_fatal_handlers();
        if (rc < 0)
                return rc;
        *step = "capture fd 1";
        rc = capture_one(1, &read_fd[0], &saved_fd[0]);
        if (rc < 0)
                return rc;
        *step = "capture fd 2";
        rc = capture_one(2, &read_fd[1], &saved_fd[1]);
        if (rc < 0) {
                release_one(1, read_fd[0], saved_fd[0]);
                return rc;
        }
        set_sinks(saved_fd, read_fd);
        *step = "start the capture thread";
        /* The thread inherits the mask: no signal meant for the cell (SIGINT). */
        sigset_t all, old;
        sigfillset(&all);
        pthread_t thread;
        rc = -pthread_sigmask(SIG_SETMASK, &all, &old);
        if (rc == 0) {
                rc = -pthread_create(&thread, NULL, reader_main, NULL);
                int rc_mask = -pthread_sigmask(SIG_SETMASK, &old, NULL);
                if (rc == 0) /* it lives as long as the process; once running, it stays */
                        return rc_mask < 0 ? rc_mask : -pthread_detach(thread);
        }
        set_sinks(std_fds, none);
        release_one(1, read_fd[0], saved_fd[0]);
        release_one(2, read_fd[1], saved_fd[1]);
        return rc;
}
