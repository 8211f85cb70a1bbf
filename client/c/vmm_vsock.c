/* Guest CIDs and vsock connect failures for the CLI's QEMU: see vmm_vsock.h. */
#include "vmm_vsock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define CID_BASE (1u << 30) /* clear of the low CIDs other tools (libvirt) hand out */
#define ERR_TAIL 4096       /* QEMU's error is its last line: read this much of the end */

unsigned cvm_allocate_cid(void)
{
        static unsigned count;
        return CID_BASE + (((unsigned)getpid() & 0x3FFFFFu) << 8) + (count++ & 0xFFu);
}

bool cvm_vhost_vsock_usable(void)
{
        int fd = open("/dev/vhost-vsock", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

enum cvm_vsock_failure cvm_vsock_classify(int err)
{
        switch (-err) {
        case ECONNRESET:
        case ECONNREFUSED:
        case ETIMEDOUT:
        case EINTR:
        case EAGAIN:
                return CVM_VSOCK_RETRY;
        case ENODEV:
        case EHOSTUNREACH:
        case ENETUNREACH:
        case EADDRNOTAVAIL:
                return CVM_VSOCK_NO_ROUTE;
        default:
                return CVM_VSOCK_UNAVAILABLE;
        }
}

bool cvm_cid_in_use(const char *path)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        char buf[ERR_TAIL + 1];
        off_t size = lseek(fd, 0, SEEK_END);
        off_t from = size > ERR_TAIL ? size - ERR_TAIL : 0;
        ssize_t n = size < 0 ? -1 : pread(fd, buf, ERR_TAIL, from);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        return strstr(buf, CVM_CID_IN_USE) != NULL;
}
