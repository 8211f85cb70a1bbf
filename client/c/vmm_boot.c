/* Boot files and kernel command line edits for the CLI's QEMU: see vmm_boot.h. */
#include "vmm_boot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Both superblocks start 1024 bytes into the device. */
#define SB_OFFSET 1024
#define EROFS_MAGIC 0xE0F5E1E2u /* le32 at the superblock's start */
#define EXT_MAGIC 0xEF53u       /* le16 at offset 0x38 of the superblock (ext2/3/4) */
#define EXT_MAGIC_AT 0x38

int cvm_rootfs_type(const char *path, const char **type)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        unsigned char sb[EXT_MAGIC_AT + 2];
        ssize_t n = pread(fd, sb, sizeof(sb), SB_OFFSET);
        int e = errno;
        close(fd);
        if (n < 0)
                return -e;
        uint32_t le32 =
            (uint32_t)sb[0] | (uint32_t)sb[1] << 8 | (uint32_t)sb[2] << 16 | (uint32_t)sb[3] << 24;
        if (n >= 4 && le32 == EROFS_MAGIC) {
                *type = "erofs";
                return 0;
        }
        if ((size_t)n == sizeof(sb) &&
            ((unsigned)sb[EXT_MAGIC_AT] | (unsigned)sb[EXT_MAGIC_AT + 1] << 8) == EXT_MAGIC) {
                *type = "ext4";
                return 0;
        }
        return -EINVAL;
}

struct line {
        char *p;
        size_t len, cap;
        bool overflow;
};

/* Appends `n` bytes of `w` as one more space-separated word. */
static void put(struct line *l, const char *w, size_t n)
{
        if (n == 0)
                return;
        size_t need = (l->len ? 1 : 0) + n;
        if (l->overflow || l->len + need >= l->cap) {
                l->overflow = true;
                return;
        }
        if (l->len)
                l->p[l->len++] = ' ';
        memcpy(l->p + l->len, w, n);
        l->len += n;
        l->p[l->len] = '\0';
}

static void put_str(struct line *l, const char *s)
{
        put(l, s, strlen(s));
}

int cvm_compose_cmdline(char *out, size_t outlen, const char *base, const char *rootfstype,
                        bool no_initramfs, const char *const *more)
{
        if (outlen == 0)
                return -E2BIG;
        struct line l = {.p = out, .cap = outlen};
        out[0] = '\0';
        char fstype[32];
        size_t fslen = (size_t)snprintf(fstype, sizeof(fstype), "rootfstype=%s", rootfstype);
        if (fslen >= sizeof(fstype))
                return -EINVAL;
        bool has_fstype = false, has_root = false, has_ro = false, has_init = false;
        for (const char *w = base; *w;) {
                size_t n = strcspn(w, " ");
                if (n >= 11 && strncmp(w, "rootfstype=", 11) == 0) {
                        put(&l, fstype, fslen); /* in place: the rest of the line stays as is */
                        has_fstype = true;
                } else {
                        put(&l, w, n);
                }
                has_root = has_root || (n >= 5 && strncmp(w, "root=", 5) == 0);
                has_ro = has_ro || (n == 2 && strncmp(w, "ro", 2) == 0);
                has_init = has_init || (n >= 5 && strncmp(w, "init=", 5) == 0);
                w += n;
                w += strspn(w, " ");
        }
        if (!has_fstype)
                put(&l, fstype, fslen);
        if (no_initramfs) {
                if (!has_root)
                        put_str(&l, "root=/dev/vda");
                if (!has_ro)
                        put_str(&l, "ro");
                if (!has_init)
                        put_str(&l, "init=" CVM_INIT_PATH);
        }
        for (const char *const *m = more; m && *m; m++)
                put_str(&l, *m);
        return l.overflow ? -E2BIG : 0;
}

int cvm_abspath(const char *path, char *out, size_t outlen)
{
        char joined[2 * 4096];
        if (path[0] == '/') {
                if (strlen(path) >= sizeof(joined))
                        return -ENAMETOOLONG;
                strcpy(joined, path);
        } else {
                if (!getcwd(joined, 4096))
                        return -errno;
                size_t n = strlen(joined);
                if (n + 1 + strlen(path) >= sizeof(joined))
                        return -ENAMETOOLONG;
                joined[n] = '/';
                strcpy(joined + n + 1, path);
        }
        /* posixpath.normpath: exactly two leading slashes stay two, more become one. */
        size_t lead = joined[1] == '/' && joined[2] != '/' ? 2 : 1;
        if (outlen <= lead)
                return -ENAMETOOLONG;
        memcpy(out, "//", lead);
        size_t k = lead;
        for (const char *p = joined; *p;) {
                p += strspn(p, "/");
                size_t n = strcspn(p, "/");
                if (n == 0)
                        break;
                if (n == 1 && p[0] == '.') {
                        /* nothing */
                } else if (n == 2 && p[0] == '.' && p[1] == '.') {
                        while (k > lead && out[k - 1] != '/')
                                k--; /* back over the last component */
                        if (k > lead)
                                k--; /* and its slash */
                } else {
                        size_t need = (k > lead ? 1 : 0) + n;
                        if (k + need >= outlen)
                                return -ENAMETOOLONG;
                        if (k > lead)
                                out[k++] = '/';
                        memcpy(out + k, p, n);
                        k += n;
                }
                p += n;
        }
        out[k] = '\0';
        return 0;
}
