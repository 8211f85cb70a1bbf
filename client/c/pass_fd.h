/* Handing a connected socket to the process that ran us (cellvm create and
 * resume --pass-fd: the SDK gets the agent connection they made). */
#ifndef CELLVM_CLIENT_PASS_FD_H
#define CELLVM_CLIENT_PASS_FD_H

/* Sends `fd` over the unix socket `sock` (SCM_RIGHTS, with one byte). 0 or a
 * negative errno. */
int cli_send_fd(int sock, int fd);

/* Parses --pass-fd's value (an fd number >= 3) into *fd: 0 or -EINVAL. */
int cli_parse_fd(const char *s, int *fd);

#endif
