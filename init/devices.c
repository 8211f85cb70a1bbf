#include "devices.h"

#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int devices_console(void)
{
        int fd = -1;

        for (int want = 0; want <= 2; want++) {
                if (fcntl(want, F_GETFD) >= 0)
                        continue;
                if (fd < 0) {
                        /* No O_CLOEXEC: fds 0-2 are meant to be inherited by the agent. */
                        fd = open("/dev/console", O_RDWR | O_NOCTTY);
                        if (fd < 0)
                                return -errno;
                }
                if (fd != want && dup2(fd, want) < 0)
                        return -errno;
        }
        if (fd > 2)
                close(fd);
        return 0;
}

/* Reads a one-line sysfs attribute without its newline. */
static int read_attr(const char *path, char *buf, size_t bufsz)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, bufsz - 1);
        int err = n < 0 ? -errno : 0;
        close(fd);
        if (err < 0)
                return err;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

static bool safe_name(const char *s)
{
        if (s[0] == '\0' || s[0] == '.')
                return false;
        return strchr(s, '/') == NULL;
}

int devices_virtio_ports(void)
{
        DIR *dir = opendir("/sys/class/virtio-ports");
        struct dirent *de;
        int made = 0;

        if (dir == NULL)
                return errno == ENOENT ? 0 : -errno;
        if (mkdir("/dev/virtio-ports", 0755) != 0 && errno != EEXIST) {
                int err = -errno;
                closedir(dir);
                return err;
        }
        while ((de = readdir(dir)) != NULL) {
                char path[300], name[64], link[160], target[300];
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", de->d_name);
                /* An unnamed port has an empty name attribute: nothing to link. */
                if (read_attr(path, name, sizeof(name)) != 0 || !safe_name(name))
                        continue;
                snprintf(link, sizeof(link), "/dev/virtio-ports/%s", name);
                snprintf(target, sizeof(target), "../%s", de->d_name);
                if (symlink(target, link) != 0 && errno != EEXIST) {
                        log_warn("symlink %s -> %s: %s", link, target, strerror(errno));
                        continue;
                }
                log_debug("virtio port %s is %s", name, de->d_name);
                made++;
        }
        closedir(dir);
        return made;
}
