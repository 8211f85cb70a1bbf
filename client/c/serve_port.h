/*
 * cellvm serve's relaying to a sandbox's own servers (getHost(port)):
 * serve_port.c relays HTTP requests, serve_upgrade.c the connections a guest
 * server upgraded (WebSocket), both over an agent tunnel (docs/PROTOCOL.md
 * section 12).
 */
#ifndef CELLVM_CLIENT_SERVE_PORT_H
#define CELLVM_CLIENT_SERVE_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve_http.h"

/* PORT_DATA of tunnel `r` with any of data, ack and eof. 0 or -errno. */
int port_send(struct mux_req *r, const uint8_t *data, size_t n, uint64_t ack, bool eof);

/* The guest answered 101 to an Upgrade request: answers the client 101 with
 * the guest's headers (`head`, `head_len` bytes, its status line included)
 * and, once libmicrohttpd hands over the connection, relays it both ways
 * through tunnel `r` (taken over), starting with the guest's `early` bytes. */
enum MHD_Result upgrade_reply(struct hreq *h, struct mux_req *r, char *head, size_t head_len,
                              const uint8_t *early, size_t nearly);

#endif
