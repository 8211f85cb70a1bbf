/* Listening endpoints (listen.c): unix, vsock and loopback tcp sockets, and the virtio-serial
 * port. */
#ifndef CELLVM_AGENT_LISTEN_H
#define CELLVM_AGENT_LISTEN_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "loop.h"

struct agent;

struct listener {
        struct listener *next;
        enum transport kind;
        char *addr;      /* as given on the command line */
        char *unix_path; /* removed at exit */
        struct watch w;
        struct conn *serial_conn; /* TR_SERIAL: the one connection, NULL while reopening */
        uint64_t reopen_at;       /* TR_SERIAL: monotonic ns of the next open attempt, 0 = none */
};

int listener_add(struct agent *a, const char *addr);
void listeners_close(struct agent *a);
/* A listening TCP socket on HOST:PORT, HOST a loopback address; `bound` gets
 * "tcp:HOST:PORT" with the real port. The fd, or -errno. */
int listen_tcp_loopback(const char *hostport, char *bound, size_t bound_size);
void listeners_timers(struct agent *a, uint64_t now, uint64_t *next);

#endif
