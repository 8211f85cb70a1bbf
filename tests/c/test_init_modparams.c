/* Unit tests for cellvm-init's `module.param=value` extraction (module_params). */
#include "../../init/modules.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static void test_collects_only_this_modules_params(void)
{
        char out[256];
        CHECK(module_params("quiet virtio_blk.queue_depth=64 vsock.x=1 virtio_blk.poll_queues=2",
                            "virtio_blk", out, sizeof(out)) == 0);
        CHECK(strcmp(out, "queue_depth=64 poll_queues=2") == 0);
        CHECK(module_params("virtio_blkx.a=1 xvirtio_blk.b=2 virtio_bl.c=3", "virtio_blk", out,
                            sizeof(out)) == 0);
        CHECK(strcmp(out, "") == 0);
}

static void test_dashes_and_underscores_name_the_same_module(void)
{
        char out[256];
        CHECK(module_params("virtio-blk.a=1 virtio_blk.b=2", "virtio_blk", out, sizeof(out)) == 0);
        CHECK(strcmp(out, "a=1 b=2") == 0);
}

static void test_flags_and_quoted_values(void)
{
        char out[256];
        CHECK(module_params("ext4.debug overlay.redirect_dir=\"on follow\"", "ext4", out,
                            sizeof(out)) == 0);
        CHECK(strcmp(out, "debug") == 0);
        CHECK(module_params("ext4.debug overlay.redirect_dir=\"on follow\"", "overlay", out,
                            sizeof(out)) == 0);
        CHECK(strcmp(out, "redirect_dir=\"on follow\"") == 0);
}

static void test_output_that_does_not_fit_is_an_error(void)
{
        char out[8];
        CHECK(module_params("m.abcdefgh=1", "m", out, sizeof(out)) == -E2BIG);
}

static void test_a_name_longer_than_any_module_name(void)
{
        char name[100], cmdline[160], out[64];
        memset(name, 'a', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        snprintf(cmdline, sizeof(cmdline), "%s.p=1", name);
        CHECK(module_params(cmdline, name, out, sizeof(out)) == -ENAMETOOLONG);
}

int main(void)
{
        test_collects_only_this_modules_params();
        test_dashes_and_underscores_name_the_same_module();
        test_flags_and_quoted_values();
        test_output_that_does_not_fit_is_an_error();
        test_a_name_longer_than_any_module_name();
        return check_report("test_init_modparams");
}
