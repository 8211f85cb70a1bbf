/*
 * The VM generation ID, seen from the guest. Where the VMM has a vmgenid device
 * (Firecracker 1.8 on, QEMU's pc/q35 machines; docs/VMM.md) the kernel's driver
 * reseeds the CRNG itself when the ID changes and logs one notice for it. The
 * driver gives user space nothing else on current kernels (the uevent it sent in
 * Linux 6.8 was reverted), so the agent reads the kernel log (/dev/kmsg, opened
 * during setup) and starts a new epoch on that notice: every interpreter then
 * reseeds before its next cell, without the host's NEW_GENERATION.
 */

#include "vmfork.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "agent.h"
#include "kmsg.h"
#include "log.h"
#include "loop.h"

/* The largest record /dev/kmsg hands out (CONSOLE_EXT_LOG_MAX). */
#define KMSG_RECORD_MAX 8192
/* Records handled per wakeup; level-triggered epoll brings us back for the rest. */
#define KMSG_BATCH 64

void epoch_advance(struct agent *a, const char *why)
{
        a->epoch++;
        log_info("epoch %llu (%s): executors reseed before their next cell",
                 (unsigned long long)a->epoch, why);
}

static void on_kmsg(struct agent *a, struct watch *w, uint32_t events)
{
        (void)events;
        static char buf[KMSG_RECORD_MAX];
        for (int i = 0; i < KMSG_BATCH && w->fd >= 0; i++) {
                ssize_t n = read(w->fd, buf, sizeof(buf));
                if (n < 0 && (errno == EINTR || errno == EPIPE))
                        continue; /* EPIPE: older records were overwritten before we read them */
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        if (n < 0)
                                log_error("reading the kernel log: %s", strerror(errno));
                        else
                                log_info("the kernel log watched for VM forks ended");
                        vmfork_watch_close(a);
                        return;
                }
                /* /dev/kmsg gives one record per read; a FIFO in its format may give more. */
                for (const char *p = buf, *end = buf + n; p < end;) {
                        const char *nl = memchr(p, '\n', (size_t)(end - p));
                        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
                        if (kmsg_is_vmfork_notice(p, len))
                                epoch_advance(a, "the kernel says the VM generation ID changed");
                        p += len + 1;
                }
        }
}

int vmfork_watch_open(struct agent *a, const char *path)
{
        int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* Only what the kernel logs from now on (a FIFO cannot seek, and needs not). */
        if (lseek(fd, 0, SEEK_END) < 0 && errno != ESPIPE) {
                int err = -errno;
                close(fd);
                return err;
        }
        a->vmfork = (struct watch){.fd = fd, .fn = on_kmsg};
        int rc = watch_set(a, &a->vmfork, EPOLLIN);
        if (rc < 0) {
                close(fd);
                a->vmfork.fd = -1;
        }
        return rc;
}

void vmfork_check(struct agent *a)
{
        if (a->vmfork.fd >= 0)
                on_kmsg(a, &a->vmfork, EPOLLIN);
}

void vmfork_watch_close(struct agent *a)
{
        watch_close(a, &a->vmfork);
}
