#include "deadline.h"

#define NS_PER_MS 1000000ull

uint64_t deadline_from_boot_ms(uint64_t ms)
{
        if (ms == 0)
                return DEADLINE_NONE;
        return ms > UINT64_MAX / NS_PER_MS ? UINT64_MAX : ms * NS_PER_MS;
}

uint64_t deadline_from_request(uint64_t now_ns, uint64_t ms_left)
{
        if (ms_left == 0)
                return DEADLINE_NONE;
        uint64_t add = ms_left > UINT64_MAX / NS_PER_MS ? UINT64_MAX : ms_left * NS_PER_MS;
        return add > UINT64_MAX - now_ns ? UINT64_MAX : now_ns + add;
}

bool deadline_request_valid(const siginfo_t *info)
{
        return info->si_signo == INIT_SIG_DEADLINE && info->si_code == SI_QUEUE &&
               info->si_uid == 0;
}

uint64_t deadline_request_ms(const siginfo_t *info)
{
        return (uint64_t)(uintptr_t)info->si_value.sival_ptr;
}

uint64_t deadline_wait_ns(uint64_t deadline_ns, uint64_t now_ns, uint64_t cap_ns)
{
        if (deadline_ns == DEADLINE_NONE)
                return cap_ns;
        if (now_ns >= deadline_ns)
                return 0;
        uint64_t left = deadline_ns - now_ns;
        return left < cap_ns ? left : cap_ns;
}
