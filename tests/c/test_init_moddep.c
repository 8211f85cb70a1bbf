/* Unit tests for cellvm-init's modules.dep parsing and load ordering. */
#include "../../init/moddep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* A slice of a real modules.dep (6.1, virtio + vsock + ext4 + overlay), with
 * ext4's dependencies deliberately listed in a non-load order. */
static const char DEP[] =
    "kernel/fs/mbcache.ko:\n"
    "kernel/fs/jbd2/jbd2.ko:\n"
    "kernel/lib/crc16.ko:\n"
    "kernel/fs/ext4/ext4.ko: kernel/lib/crc16.ko kernel/fs/mbcache.ko kernel/fs/jbd2/jbd2.ko\n"
    "kernel/fs/overlayfs/overlay.ko:\n"
    "kernel/drivers/virtio/virtio.ko:\n"
    "kernel/drivers/virtio/virtio_ring.ko:\n"
    "kernel/drivers/virtio/virtio_mmio.ko: kernel/drivers/virtio/virtio_ring.ko "
    "kernel/drivers/virtio/virtio.ko\n"
    "kernel/drivers/block/virtio_blk.ko.xz: kernel/drivers/virtio/virtio_ring.ko "
    "kernel/drivers/virtio/virtio.ko\n"
    "kernel/net/vmw_vsock/vsock.ko:\n"
    "kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko: "
    "kernel/net/vmw_vsock/vsock.ko kernel/drivers/virtio/virtio_ring.ko "
    "kernel/drivers/virtio/virtio.ko\n"
    "kernel/net/vmw_vsock/vmw_vsock_virtio_transport.ko: "
    "kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko "
    "kernel/net/vmw_vsock/vsock.ko kernel/drivers/virtio/virtio_ring.ko "
    "kernel/drivers/virtio/virtio.ko\n"
    "kernel/drivers/char/virtio_console.ko: kernel/drivers/virtio/virtio_ring.ko "
    "kernel/drivers/virtio/virtio.ko\n";

static int load(struct moddep *d, const char *text)
{
        char *copy = strdup(text);
        if (copy == NULL)
                return -ENOMEM;
        return moddep_parse(d, copy);
}

static size_t index_of(const char **order, size_t n, const char *path)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(order[i], path) == 0)
                        return i;
        return (size_t)-1;
}

static void test_module_name_of(void)
{
        char n[64];

        CHECK(module_name_of("kernel/drivers/block/virtio_blk.ko.xz", n, sizeof(n)) == 0);
        CHECK(strcmp(n, "virtio_blk") == 0);
        CHECK(module_name_of("virtio-blk", n, sizeof(n)) == 0 && strcmp(n, "virtio_blk") == 0);
        CHECK(module_name_of("a/b/", n, sizeof(n)) == -EINVAL);
        CHECK(module_name_of("abcdef", n, 4) == -EINVAL);
}

static void test_dependencies_come_first(void)
{
        struct moddep d;
        const char *order[32];
        size_t n = 0;

        CHECK(load(&d, DEP) == 0);
        CHECK(d.n == 13);
        CHECK(moddep_add(&d, "ext4", order, 32, &n) == 0);
        CHECK(n == 4);
        size_t ext4 = index_of(order, n, "kernel/fs/ext4/ext4.ko");
        CHECK(ext4 == 3);
        CHECK(index_of(order, n, "kernel/fs/jbd2/jbd2.ko") < ext4);
        CHECK(index_of(order, n, "kernel/fs/mbcache.ko") < ext4);
        CHECK(index_of(order, n, "kernel/lib/crc16.ko") < ext4);
        moddep_free(&d);
}

static void test_transitive_chain_in_order_and_each_path_once(void)
{
        struct moddep d;
        const char *order[32];
        size_t n = 0;

        CHECK(load(&d, DEP) == 0);
        CHECK(moddep_add(&d, "virtio_mmio", order, 32, &n) == 0);
        CHECK(moddep_add(&d, "virtio-blk", order, 32, &n) == 0);
        CHECK(moddep_add(&d, "vmw_vsock_virtio_transport", order, 32, &n) == 0);
        CHECK(moddep_add(&d, "virtio_blk", order, 32, &n) == 0); /* again: no-op */
        CHECK(n == 7);
        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++)
                        CHECK(strcmp(order[i], order[j]) != 0);
        size_t common =
            index_of(order, n, "kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko");
        size_t transport = index_of(order, n, "kernel/net/vmw_vsock/vmw_vsock_virtio_transport.ko");
        size_t vsock = index_of(order, n, "kernel/net/vmw_vsock/vsock.ko");
        CHECK(vsock < common && common < transport && transport == n - 1);
        CHECK(index_of(order, n, "kernel/drivers/virtio/virtio.ko") <
              index_of(order, n, "kernel/drivers/virtio/virtio_mmio.ko"));
        moddep_free(&d);
}

static void test_unknown_module_and_missing_dependency(void)
{
        struct moddep d;
        const char *order[8];
        size_t n = 0;

        CHECK(load(&d, "a.ko: missing.ko\nb.ko:\n") == 0);
        CHECK(moddep_add(&d, "nope", order, 8, &n) == -ENOENT);
        CHECK(moddep_add(&d, "a", order, 8, &n) == -ENOENT);
        CHECK(n == 0);
        CHECK(moddep_add(&d, "b", order, 8, &n) == 0 && n == 1);
        moddep_free(&d);
}

static void test_cycle_is_reported(void)
{
        struct moddep d;
        const char *order[8];
        size_t n = 0;

        CHECK(load(&d, "a.ko: b.ko\nb.ko: a.ko\nc.ko:\n") == 0);
        CHECK(moddep_add(&d, "a", order, 8, &n) == -ELOOP);
        /* The failure leaves the table usable. */
        CHECK(moddep_add(&d, "c", order, 8, &n) == 0);
        CHECK(n == 1 && strcmp(order[0], "c.ko") == 0);
        moddep_free(&d);
}

static void test_full_order_array(void)
{
        struct moddep d;
        const char *order[2];
        size_t n = 0;

        CHECK(load(&d, DEP) == 0);
        CHECK(moddep_add(&d, "ext4", order, 2, &n) == -ENOSPC);
        moddep_free(&d);
}

static void test_malformed_lines_are_skipped(void)
{
        struct moddep d;

        CHECK(load(&d, "\n: x.ko\nnot a dep line\nok.ko:\n") == 0);
        CHECK(d.n == 1 && strcmp(d.entries[0].name, "ok") == 0);
        moddep_free(&d);
}

int main(void)
{
        test_module_name_of();
        test_dependencies_come_first();
        test_transitive_chain_in_order_and_each_path_once();
        test_unknown_module_and_missing_dependency();
        test_cycle_is_reported();
        test_full_order_array();
        test_malformed_lines_are_skipped();
        return check_report("test_init_moddep");
}
