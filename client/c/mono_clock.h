/*
 * CLOCK_MONOTONIC readings for the host side's timeouts, deadlines and
 * durations: never stepped by the wall clock (the registry's deadlines are
 * wall-clock times, registry.h's creg_now_ms). One copy for client/c: a file
 * that needs one includes this rather than keeping its own.
 */
#ifndef CELLVM_CLIENT_MONO_CLOCK_H
#define CELLVM_CLIENT_MONO_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline struct timespec mono_now(void)
{
        struct timespec ts;
        /* Fails only for an unknown clock or a bad pointer: neither here. */
        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts;
}

/* Signed, so that `deadline - mono_ms()` is the time left, < 0 once past. */
static inline int64_t mono_ms(void)
{
        struct timespec ts = mono_now();
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline uint64_t mono_ns(void)
{
        struct timespec ts = mono_now();
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double mono_s(void)
{
        struct timespec ts = mono_now();
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
