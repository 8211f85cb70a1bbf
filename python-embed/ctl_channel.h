/*
 * Blocking framed messages on the executor's and zygote's control socket
 * (docs/PROTOCOL.md sections 2 and 8). Reading goes through recvmsg() so the
 * file descriptors of Z_SPAWN (SCM_RIGHTS) are collected, in arrival order,
 * into a small queue that the caller takes them from.
 */
#ifndef CELLVM_CTL_CHANNEL_H
#define CELLVM_CTL_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

/* Most received fds kept waiting to be taken; more are closed (a confused peer). */
#define CTL_MAX_FDS 16

struct ctl_channel {
        int fd;
        struct cv_reader reader;
        uint8_t *in; /* recvmsg staging buffer of CV_READER_CHUNK bytes */
        size_t in_off;
        size_t in_len;
        int fds[CTL_MAX_FDS];
        size_t nfds;
};

/* Prepares `c` for socket `fd` (not owned). Returns 0 or -ENOMEM. */
int ctl_channel_init(struct ctl_channel *c, int fd);

/* Frees buffers and closes queued fds. */
void ctl_channel_free(struct ctl_channel *c);

/*
 * Blocks until one message is complete. Returns CV_READ_MSG (fills `*msg`,
 * valid until the next call), CV_READ_EOF, -EINTR (a signal came; partial
 * input is kept, call again), -EBADMSG/-EMSGSIZE (bad stream) or another
 * negative errno of recvmsg().
 */
int ctl_channel_recv(struct ctl_channel *c, struct cv_msg *msg);

/* Takes the oldest received fd; returns it or -ENOENT if none is queued. */
int ctl_channel_take_fd(struct ctl_channel *c);

/*
 * Writes one message (chunked into frames as needed) to `fd`, blocking until
 * all of it is written; retries on EINTR. Returns 0 or a negative errno.
 */
int ctl_send(int fd, uint16_t type, uint32_t id, const uint8_t *body, size_t len);

#endif
