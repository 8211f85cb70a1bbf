#include "backoff.h"

unsigned restart_backoff_ms(unsigned prev_ms, uint64_t ran_ms, unsigned max_ms)
{
        unsigned cap = max_ms < RESTART_MIN_MS ? RESTART_MIN_MS : max_ms;

        if (prev_ms == 0 || ran_ms >= RESTART_RESET_MS)
                return RESTART_MIN_MS;
        /* prev_ms <= cap / 2 here, so the doubling cannot overflow. */
        return prev_ms > cap / 2 ? cap : prev_ms * 2;
}
