/* A VMM's guest settling, seen as the VMM's CPU time (see vmm_idle.h). */
#include "vmm_idle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mono_clock.h"

/* The first field of one thread's schedstat: 0, -ENOENT (the thread ended) or -errno. */
static int thread_ns(pid_t pid, const char *tid, uint64_t *ns)
{
        char path[320], text[128]; /* tid: a d_name, at most 255 bytes */
        snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, text, sizeof(text) - 1);
        int rc = n < 0 ? -errno : 0;
        if (close(fd) < 0 && rc == 0)
                rc = -errno;
        if (rc < 0)
                return rc;
        text[n] = '\0';
        char *end;
        errno = 0;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || end == text)
                return -EINVAL;
        *ns = v;
        return 0;
}

int cvi_cpu_ns(pid_t pid, uint64_t *ns)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *d = opendir(path);
        if (!d)
                return errno == ENOENT ? -ESRCH : -errno;
        uint64_t total = 0;
        int rc = 0;
        struct dirent *e;
        errno = 0;
        while ((e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.')
                        continue;
                uint64_t t = 0;
                int r = thread_ns(pid, e->d_name, &t);
                if (r == -ENOENT || r == -ESRCH)
                        continue; /* a thread that just ended */
                if (r < 0) {
                        rc = r;
                        break;
                }
                total += t;
        }
        if (rc == 0 && errno)
                rc = -errno;
        if (closedir(d) < 0 && rc == 0)
                rc = -errno;
        if (rc == 0)
                *ns = total;
        return rc;
}

int cvi_wait_settled(pid_t pid, int timeout_ms, int percent, int windows, int window_ms)
{
        uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
        uint64_t prev, t = mono_ns();
        int rc = cvi_cpu_ns(pid, &prev);
        if (rc < 0)
                return rc;
        int quiet = 0;
        for (;;) {
                struct timespec ts = {window_ms / 1000, (long)(window_ms % 1000) * 1000000L};
                while (nanosleep(&ts, &ts) < 0)
                        if (errno != EINTR)
                                return -errno;
                uint64_t cpu, now = mono_ns();
                if ((rc = cvi_cpu_ns(pid, &cpu)) < 0)
                        return rc;
                /* cpu / wall < percent / 100, in integers */
                quiet = (cpu - prev) * 100u < (uint64_t)percent * (now - t) ? quiet + 1 : 0;
                if (quiet >= windows)
                        return 1;
                if (now >= end)
                        return 0;
                prev = cpu;
                t = now;
        }
}
