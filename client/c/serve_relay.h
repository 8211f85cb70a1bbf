/*
 * A TCP socket and an agent tunnel (PORT_DATA, docs/PROTOCOL.md section 12)
 * relayed both ways as raw bytes: a connection a guest server upgraded
 * (serve_upgrade.c) and a guest's egress stream to the server it dialled
 * (serve_egress.c). Two directions, two threads: the caller's carries the
 * tunnel's bytes to the socket, one started here the socket's to the tunnel,
 * each within the tunnel's window.
 */
#ifndef CELLVM_CLIENT_SERVE_RELAY_H
#define CELLVM_CLIENT_SERVE_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve_mux.h"

struct relay_opts {
        const uint8_t *early; /* tunnel bytes to write to the socket first */
        size_t nearly;
        uint64_t unacked;  /* bytes already sent into the tunnel, not yet acknowledged */
        uint64_t rate;     /* bytes/s from the socket into the tunnel; 0: unbounded */
        int linger_ms;     /* after the socket's side ended, how long the tunnel may go on */
        int idle_ms;       /* nothing either way for this long ends the relay; 0: never */
        const char *label; /* for the idle message: "sandbox X: egress to Y" */
};

/* Relays until the tunnel ends (true: its terminal message came) or the
 * socket fails, lingers or idles out (false: cancel the tunnel). Shuts the
 * socket down before it returns; closing it is the caller's. */
bool serve_relay(struct mux_req *r, int sock, const struct relay_opts *o);

/* send() of all `n` bytes (MSG_NOSIGNAL): 0 or -errno. */
int serve_send_all(int fd, const void *p, size_t n);

#endif
