/* Firecracker's boot timer: a magic byte (123) written to a device the VMM
 * watches makes it log "Guest-boot-time = N us" (needs --boot-timer). */
#ifndef CELLVM_INIT_BOOT_TIMER_H
#define CELLVM_INIT_BOOT_TIMER_H

#include "config.h"

/* Returns 1 when the byte was written, 0 when the timer is off, or a negative
 * errno (-EADDRINUSE: the MMIO address is guest RAM here, not a device). A
 * write where no device listens is harmless: QEMU and KVM drop it. */
int boot_timer_signal(enum boot_timer_mode mode, uint64_t mmio_addr);

#endif
