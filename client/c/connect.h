/* Opening the byte stream to an agent. */
#ifndef CELLVM_CLIENT_CONNECT_H
#define CELLVM_CLIENT_CONNECT_H

#include <stddef.h>

/* How long one vsock connect waits for the guest (the kernel's default is 2 s). */
#define CVC_VSOCK_CONNECT_TIMEOUT_MS 500

/* Returns a connected, blocking, CLOEXEC socket fd for "unix:PATH",
 * "tcp:HOST:PORT" or "vsock:CID:PORT", or a negative errno with `err` saying
 * why. */
int cvc_open_stream(const char *addr, char *err, size_t errlen);

/* "CID:PORT" (decimal, each below 2^32) -> 0, or -EINVAL. */
int cvc_parse_vsock(const char *cidport, unsigned *cid, unsigned *port);

#endif
