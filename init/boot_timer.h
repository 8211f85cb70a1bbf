/* Firecracker's boot timer: a magic byte (123) written to a device the VMM
 * watches makes it log "Guest-boot-time = N us" (needs --boot-timer, since
 * v0.23). The device is MMIO, the first on the bus: 0xd0000000 on x86-64
 * (0xc0000000 after the 2025 re-layout for PCI), 0x40000000 on arm64; before
 * mid-2020 x86 used I/O port 0x3f0 instead (mode pio). */
#ifndef CELLVM_INIT_BOOT_TIMER_H
#define CELLVM_INIT_BOOT_TIMER_H

#include "config.h"

/* Returns 1 when the byte was written, 0 when the timer is off, or a negative
 * errno (-EADDRINUSE: the MMIO address is guest RAM here, not a device). A
 * write where no device listens is harmless: QEMU and KVM drop it. */
int boot_timer_signal(enum boot_timer_mode mode, uint64_t mmio_addr);

#endif
