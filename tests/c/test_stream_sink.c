/*
 * Unit tests for the executor's output sinks (python-embed/stream_sink.c):
 * text and captured fd output leave in the order written once the sink is
 * watched, a full agent pipe keeps the unwritten rest first in line, and a
 * flush forwards no more than the capture pipe held when it began.
 */
#include "../../python-embed/stream_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

struct rig {
        struct stream_sink sink;
        int agent_r, agent_w, fd_r, fd_w; /* the agent's pipe, the captured fd's */
};

static int rig_open(struct rig *r)
{
        int a[2], c[2];
        if (pipe2(a, O_CLOEXEC) < 0 || pipe2(c, O_CLOEXEC) < 0)
                return -1;
        if (fcntl(a[1], F_SETFL, O_NONBLOCK) < 0 || fcntl(c[0], F_SETFL, O_NONBLOCK) < 0 ||
            fcntl(a[0], F_SETFL, O_NONBLOCK) < 0)
                return -1;
        r->agent_r = a[0];
        r->agent_w = a[1];
        r->fd_r = c[0];
        r->fd_w = c[1];
        stream_sink_init(&r->sink, a[1]);
        r->sink.capture_fd = c[0];
        r->sink.out_nonblocking = 1;
        return 0;
}

static void rig_close(struct rig *r)
{
        stream_sink_destroy(&r->sink);
        close(r->agent_r);
        close(r->agent_w);
        close(r->fd_r);
        close(r->fd_w);
}

/* What the agent would read now (at most n - 1 bytes), NUL-terminated. */
static const char *agent_reads(struct rig *r, char *buf, size_t n)
{
        ssize_t got = read(r->agent_r, buf, n - 1);
        buf[got > 0 ? got : 0] = '\0';
        return buf;
}

/* out_stream.c's append, without Python. */
static int append(struct stream_sink *s, const char *text)
{
        size_t n = strlen(text);
        if (stream_sink_try_append(s, text, n))
                return 0;
        stream_sink_lock(s);
        int rc = 0;
        if (!stream_sink_can_buffer(s, n))
                rc = stream_sink_flush_locked(s);
        if (rc == 0)
                stream_sink_put(s, text, n);
        stream_sink_unlock(s);
        return rc;
}

static void fd_writes(struct rig *r, const char *text)
{
        CHECK(write(r->fd_w, text, strlen(text)) == (ssize_t)strlen(text));
}

static void test_watched_keeps_the_order(void)
{
        struct rig r;
        char buf[256];
        CHECK(rig_open(&r) == 0);
        stream_sink_watch(&r.sink);
        CHECK(append(&r.sink, "a\n") == 0);
        fd_writes(&r, "fd\n");
        CHECK(append(&r.sink, "b\n") == 0); /* finds the fd's bytes: a and fd go first */
        CHECK(strcmp(agent_reads(&r, buf, sizeof(buf)), "a\nfd\n") == 0);
        CHECK(stream_sink_flush(&r.sink) == 0);
        CHECK(strcmp(agent_reads(&r, buf, sizeof(buf)), "b\n") == 0);
        rig_close(&r);
}

static void test_unwatched_buffers_without_looking(void)
{
        /* The documented race: a write nobody announced, text right after it. */
        struct rig r;
        char buf[256];
        CHECK(rig_open(&r) == 0);
        CHECK(append(&r.sink, "a\n") == 0);
        fd_writes(&r, "fd\n");
        CHECK(append(&r.sink, "b\n") == 0);
        CHECK(stream_sink_flush(&r.sink) == 0);
        CHECK(strcmp(agent_reads(&r, buf, sizeof(buf)), "a\nb\nfd\n") == 0);
        /* Having forwarded captured bytes, the sink is watched now. */
        CHECK(append(&r.sink, "c\n") == 0);
        fd_writes(&r, "fd2\n");
        CHECK(append(&r.sink, "d\n") == 0);
        CHECK(stream_sink_flush(&r.sink) == 0);
        CHECK(strcmp(agent_reads(&r, buf, sizeof(buf)), "c\nfd2\nd\n") == 0);
        rig_close(&r);
}

static void test_a_full_agent_pipe_keeps_the_rest_first(void)
{
        struct rig r;
        static char big[STREAM_SINK_BUFFER], got[4 * STREAM_SINK_BUFFER];
        CHECK(rig_open(&r) == 0);
        CHECK(fcntl(r.agent_w, F_SETPIPE_SZ, 4096) >= 0);
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        CHECK(append(&r.sink, big) == 0);
        fd_writes(&r, "fd\n");
        stream_sink_watch(&r.sink);
        CHECK(stream_sink_flush(&r.sink) == -EAGAIN); /* 4 KiB went */
        CHECK(append(&r.sink, "after\n") == -EAGAIN); /* the rest and fd come first */
        size_t total = 0;
        int rounds = 0;
        for (;;) {
                ssize_t n = read(r.agent_r, got + total, sizeof(got) - total);
                if (n > 0)
                        total += (size_t)n;
                int rc = append(&r.sink, "after\n");
                if (rc == 0 || ++rounds > 1000)
                        break;
        }
        CHECK(stream_sink_flush_all(&r.sink) == 0);
        ssize_t n;
        while ((n = read(r.agent_r, got + total, sizeof(got) - total)) > 0)
                total += (size_t)n;
        CHECK(total == sizeof(big) - 1 + strlen("fd\nafter\n"));
        CHECK(memcmp(got, big, sizeof(big) - 1) == 0);
        CHECK(memcmp(got + sizeof(big) - 1, "fd\nafter\n", strlen("fd\nafter\n")) == 0);
        rig_close(&r);
}

static void test_a_flush_takes_what_the_pipe_held_when_it_began(void)
{
        struct rig r;
        char buf[256];
        CHECK(rig_open(&r) == 0);
        fd_writes(&r, "one\n");
        CHECK(stream_sink_flush(&r.sink) == 0);
        CHECK(strcmp(agent_reads(&r, buf, sizeof(buf)), "one\n") == 0);
        CHECK(stream_sink_is_empty(&r.sink, 1) == 1);
        fd_writes(&r, "two\n");
        CHECK(stream_sink_is_empty(&r.sink, 1) == 0);
        CHECK(stream_sink_is_empty(&r.sink, 0) == 1);
        rig_close(&r);
}

int main(void)
{
        test_watched_keeps_the_order();
        test_unwatched_buffers_without_looking();
        test_a_full_agent_pipe_keeps_the_rest_first();
        test_a_flush_takes_what_the_pipe_held_when_it_began();
        return check_report("test_stream_sink");
}
