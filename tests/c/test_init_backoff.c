/* Unit tests for cellvm-init's agent restart backoff (restart_backoff_ms). */
#include "../../init/backoff.h"

#include <stdio.h>

#include "check.h"

static void test_doubles_up_to_the_cap(void)
{
        static const unsigned want[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000};
        unsigned b = 0;
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
                b = restart_backoff_ms(b, 50, 5000);
                CHECK(b == want[i]);
        }
}

static void test_cap_that_is_no_power_of_two(void)
{
        CHECK(restart_backoff_ms(100, 0, 300) == 200);
        CHECK(restart_backoff_ms(200, 0, 300) == 300);
        CHECK(restart_backoff_ms(300, 0, 300) == 300);
        CHECK(restart_backoff_ms(100, 0, 150) == 150);
}

static void test_stable_run_resets(void)
{
        CHECK(restart_backoff_ms(5000, RESTART_RESET_MS, 5000) == RESTART_MIN_MS);
        CHECK(restart_backoff_ms(5000, 3600000, 5000) == RESTART_MIN_MS);
        /* Just short of stable: still dying young. */
        CHECK(restart_backoff_ms(1600, RESTART_RESET_MS - 1, 5000) == 3200);
}

static void test_max_below_the_floor_is_the_floor(void)
{
        /* cellvm.restart_max_ms=0 once meant no delay at all: PID 1 spinning. */
        unsigned b = 0;
        for (int i = 0; i < 4; i++) {
                b = restart_backoff_ms(b, 0, 0);
                CHECK(b == RESTART_MIN_MS);
        }
        CHECK(restart_backoff_ms(0, 0, 50) == RESTART_MIN_MS);
        CHECK(restart_backoff_ms(100, 0, 50) == RESTART_MIN_MS);
}

static void test_largest_cap_does_not_overflow(void)
{
        unsigned b = 0;
        for (int i = 0; i < 40; i++)
                b = restart_backoff_ms(b, 0, 600000);
        CHECK(b == 600000);
        CHECK(restart_backoff_ms(4000000000u, 0, 4000000000u) == 4000000000u);
}

int main(void)
{
        test_doubles_up_to_the_cap();
        test_cap_that_is_no_power_of_two();
        test_stable_run_resets();
        test_max_below_the_floor_is_the_floor();
        test_largest_cap_does_not_overflow();
        return check_report("test_init_backoff");
}
