/* The HTTP API of Firecracker and Cloud Hypervisor on their Unix socket
 * (`--api-sock` / `--api-socket`): one JSON request per connection, as
 * client/python/cellvm/_http_unix.py sends them. The reply is outside input:
 * its head and body are bounded. */
#ifndef CELLVM_CLIENT_VMM_API_H
#define CELLVM_CLIENT_VMM_API_H

#include <stddef.h>

#define CVM_API_REPLY_MAX 16384

/* `method path` with `body` (JSON text, or NULL for none). 0 on a 2xx reply;
 * -EREMOTEIO for another status (`err`: "HTTP <status>: <body>"), -ETIMEDOUT,
 * -EPROTO for a reply that is not HTTP or over CVM_API_REPLY_MAX, or the
 * socket's error. */
int cvm_api_call(const char *sock, const char *method, const char *path, const char *body,
                 int timeout_ms, char *err, size_t errlen);

/* `s` as a JSON string, quotes included. 0 or -E2BIG. */
int cvm_api_json_string(const char *s, char *out, size_t outlen);

/* Waits until `sock` accepts connections, within `timeout_ms`;
 * `still_alive(ud)` (when given) 0 gives up with -ECHILD. */
int cvm_api_wait(const char *sock, int timeout_ms, int (*still_alive)(void *ud), void *ud,
                 char *err, size_t errlen);

#endif
