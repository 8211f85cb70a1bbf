/* The CLI's QEMU helpers that need no QEMU: the kernel command line edits and
 * root image types (client/c/vmm_boot.c), guest CIDs and vsock connect
 * failures (client/c/vmm_vsock.c), vsock addresses (client/c/connect.c). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../client/c/connect.h"
#include "../../client/c/vmm_boot.h"
#include "../../client/c/vmm_vsock.h"
#include "python_ref.h"

static const char base[] = "console=ttyS0 root=/dev/vda rootfstype=ext4 ro panic=-1 quiet";

static void test_cmdline_defaults_and_tcg(void)
{
        char out[512];
        const char *more[] = {"reboot=t pci=off", "tsc_early_khz=2000000", "", NULL};
        assert(cvm_compose_cmdline(out, sizeof(out), base, "ext4", false, more) == 0);
        assert(strcmp(out, "console=ttyS0 root=/dev/vda rootfstype=ext4 ro panic=-1 quiet "
                           "reboot=t pci=off tsc_early_khz=2000000") == 0);
}

static void test_cmdline_erofs_without_initramfs(void)
{
        char out[512];
        const char *more[] = {"reboot=t", NULL};
        assert(cvm_compose_cmdline(out, sizeof(out), base, "erofs", true, more) == 0);
        /* rootfstype in place; root= and ro are there already; init= is added */
        assert(strcmp(out, "console=ttyS0 root=/dev/vda rootfstype=erofs ro panic=-1 quiet "
                           "init=/sbin/cellvm-init reboot=t") == 0);
        assert(cvm_compose_cmdline(out, sizeof(out), "  console=ttyS0  ", "ext4", true, NULL) == 0);
        assert(strcmp(out, "console=ttyS0 rootfstype=ext4 root=/dev/vda ro "
                           "init=/sbin/cellvm-init") == 0);
}

static void test_cmdline_overflow(void)
{
        char out[16];
        assert(cvm_compose_cmdline(out, sizeof(out), base, "ext4", false, NULL) == -E2BIG);
        assert(strlen(out) < sizeof(out));
}

static void write_file(const char *path, size_t size, size_t at, const void *magic, size_t n)
{
        unsigned char *buf = calloc(1, size);
        assert(buf);
        memcpy(buf + at, magic, n);
        FILE *f = fopen(path, "wb");
        assert(f && fwrite(buf, 1, size, f) == size && fclose(f) == 0);
        free(buf);
}

static void test_rootfs_types(void)
{
        char dir[] = "/tmp/cellvm-test-XXXXXX";
        assert(mkdtemp(dir));
        char path[64];
        const char *type = NULL;
        snprintf(path, sizeof(path), "%s/img", dir);
        write_file(path, 4096, 1024, "\xe2\xe1\xf5\xe0", 4);
        assert(cvm_rootfs_type(path, &type) == 0 && strcmp(type, "erofs") == 0);
        write_file(path, 4096, 1024 + 0x38, "\x53\xef", 2);
        assert(cvm_rootfs_type(path, &type) == 0 && strcmp(type, "ext4") == 0);
        write_file(path, 4096, 0, "", 0);
        assert(cvm_rootfs_type(path, &type) == -EINVAL);
        write_file(path, 100, 0, "", 0); /* shorter than a superblock */
        assert(cvm_rootfs_type(path, &type) == -EINVAL);
        assert(unlink(path) == 0);
        assert(cvm_rootfs_type(path, &type) == -ENOENT);
        assert(rmdir(dir) == 0);
}

static void test_cids(void)
{
        unsigned a = cvm_allocate_cid(), b = cvm_allocate_cid();
        assert(a != b);
        assert(a > 2 && a < (1u << 31) && (a - (1u << 30)) >> 8 == (unsigned)getpid());
}

static void test_vsock_failures(void)
{
        assert(cvm_vsock_classify(-ETIMEDOUT) == CVM_VSOCK_RETRY);
        assert(cvm_vsock_classify(-ECONNRESET) == CVM_VSOCK_RETRY);
        assert(cvm_vsock_classify(-ENODEV) == CVM_VSOCK_NO_ROUTE);
        assert(cvm_vsock_classify(-EACCES) == CVM_VSOCK_UNAVAILABLE);
        assert(cvm_vsock_classify(-EAFNOSUPPORT) == CVM_VSOCK_UNAVAILABLE);
}

static void test_vsock_addresses(void)
{
        unsigned cid, port;
        assert(cvc_parse_vsock("1073741827:1024", &cid, &port) == 0);
        assert(cid == 1073741827u && port == 1024);
        assert(cvc_parse_vsock("4294967295:0", &cid, &port) == 0 && cid == 4294967295u);
        const char *bad[] = {"3", "3:", ":3", "x:1", "3:1x", "-1:5", "4294967296:1", "1:2:3"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert(cvc_parse_vsock(bad[i], &cid, &port) == -EINVAL);
        char err[128];
        assert(cvc_open_stream("vsock:3", err, sizeof(err)) == -EINVAL);
        assert(strstr(err, "vsock:CID:PORT"));
}

static void test_cid_in_use(void)
{
        char dir[] = "/tmp/cellvm-test-XXXXXX";
        assert(mkdtemp(dir));
        char path[64];
        snprintf(path, sizeof(path), "%s/qemu.err", dir);
        FILE *f = fopen(path, "w");
        assert(f);
        fprintf(f, "qemu-system-x86_64: -device vhost-vsock-device,guest-cid=5: vhost-vsock: "
                   "unable to set guest cid: Address already in use\n");
        assert(fclose(f) == 0);
        assert(cvm_cid_in_use(path));
        f = fopen(path, "w");
        assert(f);
        fprintf(f, "qemu-system-x86_64: -device vhost-vsock-device: vhost-vsock: failed to open "
                   "vhost device: No such file or directory\n");
        assert(fclose(f) == 0);
        assert(!cvm_cid_in_use(path));
        assert(unlink(path) == 0 && rmdir(dir) == 0);
        assert(!cvm_cid_in_use(path));
}

/* cvm_abspath gives what os.path.abspath gives (template file lines hold
 * these paths, so the names of C's and Python's templates depend on it). */
static void test_abspath_as_python(void)
{
        static const char *const paths[] = {
            "build/image",
            "./build//image/",
            "/a/b/../c",
            "/../x",
            "//two/slashes",
            "///three",
            "a/../../b",
            ".",
            "/",
            "x/./y/.",
            "/tmp/a,b/é",
            NULL,
        };
        char code[1024] = "import os\n";
        for (const char *const *p = paths; *p; p++)
                snprintf(code + strlen(code), sizeof(code) - strlen(code),
                         "print(os.path.abspath('%s'))\n", *p);
        char want[4096], mine[4096] = "", one[512];
        assert(python_ref(code, NULL, 0, want, sizeof(want)) == 0);
        for (const char *const *p = paths; *p; p++) {
                assert(cvm_abspath(*p, one, sizeof(one)) == 0);
                snprintf(mine + strlen(mine), sizeof(mine) - strlen(mine), "%s\n", one);
        }
        if (strcmp(want, mine) != 0)
                fprintf(stderr, "python:\n%sC:\n%s", want, mine);
        assert(strcmp(want, mine) == 0);
        assert(cvm_abspath("/abc", one, 4) == -ENAMETOOLONG);
}

int main(void)
{
        test_abspath_as_python();
        test_cmdline_defaults_and_tcg();
        test_cmdline_erofs_without_initramfs();
        test_cmdline_overflow();
        test_rootfs_types();
        test_cids();
        test_vsock_failures();
        test_vsock_addresses();
        test_cid_in_use();
        puts("test_client_vmm: ok");
        return 0;
}
