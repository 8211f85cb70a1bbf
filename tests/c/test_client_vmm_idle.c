/*
 * Unit tests of client/c/vmm_idle.c on real processes: a child that spins
 * for a while and then sleeps (a guest finishing a spare's warm-up) is seen
 * as settled only after it stopped spinning; one that never stops is
 * reported at the timeout; a process that is gone is -ESRCH.
 */
#include "../../client/c/vmm_idle.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A child that spins for `busy_s` seconds (for ever if negative), then sleeps. */
static pid_t spinner(double busy_s)
{
        pid_t pid = fork();
        if (pid == 0) {
                double end = now_s() + busy_s;
                volatile unsigned long n = 0;
                while (busy_s < 0 || now_s() < end)
                        n++;
                for (;;)
                        pause();
        }
        return pid;
}

static void reap(pid_t pid)
{
        CHECK(kill(pid, SIGKILL) == 0);
        CHECK(waitpid(pid, NULL, 0) == pid);
}

static void test_settles_after_work(void)
{
        pid_t pid = spinner(1.5);
        CHECK(pid > 0);
        double t0 = now_s();
        int rc = cvi_wait_settled(pid, 20000, CVI_IDLE_PERCENT, 2, 250);
        double took = now_s() - t0;
        CHECK(rc == 1);
        CHECK(took >= 1.5); /* not while it spun */
        CHECK(took < 15.0);
        if (rc != 1 || took < 1.5)
                fprintf(stderr, "rc %d after %.2f s\n", rc, took);
        reap(pid);
}

static void test_busy_until_timeout(void)
{
        pid_t pid = spinner(-1);
        CHECK(pid > 0);
        double t0 = now_s();
        int rc = cvi_wait_settled(pid, 1000, CVI_IDLE_PERCENT, 2, 250);
        CHECK(rc == 0);
        CHECK(now_s() - t0 >= 1.0);
        reap(pid);
}

static void test_gone(void)
{
        pid_t pid = fork();
        if (pid == 0)
                _exit(0);
        CHECK(waitpid(pid, NULL, 0) == pid);
        uint64_t ns;
        CHECK(cvi_cpu_ns(pid, &ns) == -ESRCH);
        CHECK(cvi_wait_settled(pid, 1000, CVI_IDLE_PERCENT, 2, 250) == -ESRCH);
}

static void test_counts_own_threads(void)
{
        uint64_t a, b;
        CHECK(cvi_cpu_ns(getpid(), &a) == 0);
        double end = now_s() + 0.05;
        volatile unsigned long n = 0;
        while (now_s() < end)
                n++;
        CHECK(cvi_cpu_ns(getpid(), &b) == 0);
        CHECK(b > a);
}

int main(void)
{
        test_counts_own_threads();
        test_gone();
        test_busy_until_timeout();
        test_settles_after_work();
        return check_report("test_client_vmm_idle");
}
