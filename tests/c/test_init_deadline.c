/* Unit tests for cellvm-init's deadline (init/deadline.c): the boot key's
 * value, a request's new deadline, which signals count as requests, the
 * wait before it; and a real sigqueue(3) to ourselves carrying 64-bit ms. */
#include "../../init/deadline.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static void test_boot_value(void)
{
        CHECK(deadline_from_boot_ms(0) == DEADLINE_NONE);
        CHECK(deadline_from_boot_ms(20000) == 20000ull * 1000000ull);
        CHECK(deadline_from_boot_ms(UINT64_MAX) == UINT64_MAX); /* saturates, never wraps */
}

static void test_request_value(void)
{
        CHECK(deadline_from_request(5, 0) == DEADLINE_NONE);
        CHECK(deadline_from_request(1000, 3) == 1000 + 3000000ull);
        CHECK(deadline_from_request(UINT64_MAX - 10, 1) == UINT64_MAX);
        CHECK(deadline_from_request(1, UINT64_MAX / 2) == UINT64_MAX);
}

static void test_wait(void)
{
        uint64_t cap = 3600ull * 1000000000ull;
        CHECK(deadline_wait_ns(DEADLINE_NONE, 123, cap) == cap);
        CHECK(deadline_wait_ns(100, 100, cap) == 0);
        CHECK(deadline_wait_ns(100, 200, cap) == 0);
        CHECK(deadline_wait_ns(1000, 400, cap) == 600);
        CHECK(deadline_wait_ns(cap * 3, 0, cap) == cap);
}

static void test_only_queued_root_signals_count(void)
{
        siginfo_t i;

        memset(&i, 0, sizeof(i));
        i.si_signo = INIT_SIG_DEADLINE;
        i.si_code = SI_QUEUE;
        i.si_uid = 0;
        CHECK(deadline_request_valid(&i));
        i.si_uid = 1000; /* user code */
        CHECK(!deadline_request_valid(&i));
        i.si_uid = 0;
        i.si_code = SI_USER; /* kill(1, 40): carries no value */
        CHECK(!deadline_request_valid(&i));
        i.si_code = SI_QUEUE;
        i.si_signo = SIGTERM;
        CHECK(!deadline_request_valid(&i));
}

/* What init gets from the agent's sigqueue, for real: the signal number is
 * in range for this libc and the 64-bit value survives. */
static void test_sigqueue_round_trip(void)
{
        sigset_t set, old;
        siginfo_t info;
        uint64_t ms = (sizeof(void *) == 8) ? 5000000000ull : 20000ull;

        CHECK(INIT_SIG_DEADLINE >= SIGRTMIN && INIT_SIG_DEADLINE <= SIGRTMAX);
        sigemptyset(&set);
        sigaddset(&set, INIT_SIG_DEADLINE);
        CHECK(sigprocmask(SIG_BLOCK, &set, &old) == 0);
        union sigval v = {.sival_ptr = (void *)(uintptr_t)ms};
        CHECK(sigqueue(getpid(), INIT_SIG_DEADLINE, v) == 0);
        struct timespec ts = {5, 0};
        CHECK(sigtimedwait(&set, &info, &ts) == INIT_SIG_DEADLINE);
        CHECK(info.si_code == SI_QUEUE && info.si_pid == getpid());
        CHECK(deadline_request_ms(&info) == ms);
        CHECK(deadline_request_valid(&info) == (getuid() == 0));
        CHECK(sigprocmask(SIG_SETMASK, &old, NULL) == 0);
}

int main(void)
{
        test_boot_value();
        test_request_value();
        test_wait();
        test_only_queued_root_signals_count();
        test_sigqueue_round_trip();
        return check_report("test_init_deadline");
}
