/* cellvm-init's configuration: the cellvm.* keys of the kernel command line
 * (plus the kernel's own root=/rootfstype=). docs/INIT.md documents each key. */
#ifndef CELLVM_INIT_CONFIG_H
#define CELLVM_INIT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "cmdline.h"

enum net_policy {
        NET_LOOPBACK, /* lo only: the sandbox has no network (default) */
        NET_STATIC,   /* eth0 with cellvm.ip / cellvm.gateway */
};

enum shutdown_action {
        SHUTDOWN_REBOOT,   /* reboot(RB_AUTOBOOT): Firecracker exits with reboot=k */
        SHUTDOWN_POWEROFF, /* reboot(RB_POWER_OFF): QEMU and others power off */
};

enum boot_timer_mode {
        BOOT_TIMER_OFF,
        BOOT_TIMER_MMIO, /* a byte written to the MMIO address (Firecracker since mid-2020) */
        BOOT_TIMER_PIO,  /* a byte written to I/O port 0x3f0 (x86 Firecracker before that) */
};

struct init_config {
        char agent[256];
        char agent_args[CMDLINE_VALUE_MAX];
        unsigned vsock_port; /* 0: no vsock listener */
        char serial[64];     /* virtio-serial port name, "" for none */
        char workdir[256];
        char hostname[65];
        enum net_policy net;
        char ip[64];         /* "a.b.c.d/prefix" */
        char gateway[64];    /* "a.b.c.d" or "" */
        char dns[256];       /* comma-separated nameservers for /etc/resolv.conf */
        uint64_t mem_limit;  /* bytes of memory for user code, 0 = unlimited */
        uint64_t pids_limit; /* tasks for user code, 0 = unlimited */
        char entropy[1025];  /* hex seed */
        bool debug;
        enum boot_timer_mode boot_timer;
        uint64_t boot_timer_addr;
        bool test;
        char root[128];
        char rootfstype[32];
        unsigned root_timeout_ms;
        enum shutdown_action shutdown;
        unsigned shutdown_timeout_ms;
        unsigned restart_max_ms; /* floored at RESTART_MIN_MS (backoff.h) */
        uint64_t deadline_ms;    /* CLOCK_BOOTTIME ms of the shutdown (deadline.h), 0 = none */
};

typedef void (*config_warn_fn)(void *ctx, const char *key, const char *why);

void config_defaults(struct init_config *c);
/* Applies every recognised key of cmdline over c. Malformed values and unknown
 * cellvm.* keys are reported through warn and leave the default in place.
 * Returns the number of such problems. */
int config_parse(struct init_config *c, const char *cmdline, config_warn_fn warn, void *ctx);

#endif
