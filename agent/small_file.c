/* Reading a small file whole: the /proc and cgroup files the agent parses. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "small_file.h"

int small_file_read(const char *path, char *out, size_t size)
{
        if (size == 0)
                return -EINVAL;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t got = 0;
        int rc = 0;
        while (got + 1 < size) {
                ssize_t n = read(fd, out + got, size - 1 - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        rc = -errno;
                        break;
                }
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        out[got] = '\0';
        if (close(fd) < 0 && rc == 0)
                rc = -errno;
        return rc < 0 ? rc : (int)got;
}
