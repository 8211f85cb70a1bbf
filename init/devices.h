/* Device plumbing a udev would otherwise do: the console on fds 0-2 and the
 * /dev/virtio-ports/<name> links the agent's serial transport opens. */
#ifndef CELLVM_INIT_DEVICES_H
#define CELLVM_INIT_DEVICES_H

/* Opens /dev/console on any of fds 0, 1, 2 the kernel left closed. */
int devices_console(void);
/* Creates /dev/virtio-ports/<name> -> ../vportNpM for each named port.
 * Returns the number of links made or a negative errno. */
int devices_virtio_ports(void);

#endif
