/* Pseudo-terminals (pty.h). The slave is reached with TIOCGPTPEER rather than
 * by its /dev/pts path, so no name lookup can hand the agent another file. */

#include "pty.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "log.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

int pty_resize(int master, uint16_t cols, uint16_t rows)
{
        struct winsize ws = {.ws_row = rows, .ws_col = cols};
        return ioctl(master, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}

int pty_open(uint16_t cols, uint16_t rows, int *master, int *slave)
{
        int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (m < 0)
                return -errno;
        int unlock = 0, rc = 0;
        if (ioctl(m, TIOCSPTLCK, &unlock) < 0)
                rc = -errno;
        if (rc == 0)
                rc = pty_resize(m, cols, rows);
        int s = rc < 0 ? -1 : ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (rc == 0 && s < 0)
                rc = -errno;
        if (rc < 0) {
                if (close(m) < 0)
                        log_warn("pty: close: %s", strerror(errno));
                return rc;
        }
        *master = m;
        *slave = s;
        return 0;
}
