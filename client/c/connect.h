/* Opening the byte stream to an agent. */
#ifndef CELLVM_CLIENT_CONNECT_H
#define CELLVM_CLIENT_CONNECT_H

#include <stddef.h>

/* Returns a connected, blocking, CLOEXEC socket fd for "unix:PATH" or
 * "tcp:HOST:PORT", or a negative errno with `err` saying why. */
int cvc_open_stream(const char *addr, char *err, size_t errlen);

#endif
