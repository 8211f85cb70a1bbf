/* Unit tests of the CLI's host TSC frequency (client/c/host_tsc.c): the cache line,
 * the command-line rewrite, and a measurement that agrees with itself. */
#include "../../client/c/host_tsc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define BOOT "4f3b2a10-0000-4000-8000-000000000001"

static void test_cache_line(void)
{
        uint64_t khz = 0;
        CHECK(cvm_tsc_cache_parse("cellvm-host-tsc 1 " BOOT " 2445000\n", BOOT, &khz) == 0);
        CHECK(khz == 2445000);
        CHECK(cvm_tsc_cache_parse("cellvm-host-tsc 1 " BOOT " 2100000", BOOT, &khz) == 0);
        CHECK(khz == 2100000);
        khz = 7;
        const char *bad[] = {
            "cellvm-host-tsc 1 4f3b2a10-0000-4000-8000-000000000002 2445000\n", /* other boot */
            "cellvm-host-tsc 2 " BOOT " 2445000\n",                             /* format */
            "cellvm-host-tsc 1 " BOOT " 99\n",                                  /* implausible */
            "cellvm-host-tsc 1 " BOOT " 99999999999\n",
            "cellvm-host-tsc 1 " BOOT " -2445000\n",
            "cellvm-host-tsc 1 " BOOT " 2445000x\n",
            "cellvm-host-tsc 1 " BOOT "\n",
            "",
            NULL,
        };
        for (const char **b = bad; *b; b++)
                CHECK(cvm_tsc_cache_parse(*b, BOOT, &khz) == -EINVAL);
        CHECK(khz == 7);
        CHECK(cvm_tsc_cache_parse("cellvm-host-tsc 1  2445000\n", "", &khz) == -EINVAL);
}

static void test_cmdline(void)
{
        char out[128];
        CHECK(cvm_tcg_cmdline("tsc_early_khz=2000000", 2445000, out, sizeof(out)) == 0);
        CHECK(strcmp(out, "tsc_early_khz=2445000 tsc=reliable") == 0);
        CHECK(cvm_tcg_cmdline("a=1 tsc_early_khz=2000000  b", 2100000, out, sizeof(out)) == 0);
        CHECK(strcmp(out, "a=1 b tsc_early_khz=2100000 tsc=reliable") == 0);
        CHECK(cvm_tcg_cmdline("", 2100000, out, sizeof(out)) == 0);
        CHECK(strcmp(out, "tsc_early_khz=2100000 tsc=reliable") == 0);
        /* A tsc= of the image's stays, and is not added twice. */
        CHECK(cvm_tcg_cmdline("tsc=unstable tsc_early_khz=1", 2100000, out, sizeof(out)) == 0);
        CHECK(strcmp(out, "tsc=unstable tsc_early_khz=2100000") == 0);
        /* Unknown frequency (0): the image's value stays. */
        CHECK(cvm_tcg_cmdline("tsc_early_khz=2000000", 0, out, sizeof(out)) == 0);
        CHECK(strcmp(out, "tsc_early_khz=2000000 tsc=reliable") == 0);
        CHECK(cvm_tcg_cmdline("a=1", 2100000, out, 10) == -E2BIG);
        /* "a=1 tsc_early_khz=2100000 tsc=reliable": 38 characters and the NUL */
        CHECK(cvm_tcg_cmdline("a=1", 2100000, out, 39) == 0);
        CHECK(cvm_tcg_cmdline("a=1", 2100000, out, 38) == -E2BIG);
        CHECK(cvm_tcg_cmdline("a=1", 2100000, out, 0) == -E2BIG);
}

/* Two measurements (each the median of three 50 ms intervals) agree to 0.1 %:
 * far below the guest's 0.5 % budget. The value itself is compared with the
 * kernel's in tests/test_host_tsc.py. */
static void test_measurement_is_stable(void)
{
        uint64_t a = 0, b = 0;
        int rc = cvm_host_tsc_measure(&a);
        if (rc == -ENOTSUP) {
                printf("test_client_host_tsc: no TSC on this host, measurement skipped\n");
                return;
        }
        CHECK(rc == 0 && cvm_host_tsc_measure(&b) == 0);
        CHECK(a >= 100000 && a <= 10000000);
        double rel = (double)(a > b ? a - b : b - a) / (double)a;
        CHECK(rel < 1e-3);
        if (rel >= 1e-3)
                fprintf(stderr, "measured %llu and %llu kHz\n", (unsigned long long)a,
                        (unsigned long long)b);
}

int main(void)
{
        test_cache_line();
        test_cmdline();
        test_measurement_is_stable();
        return check_report("test_client_host_tsc");
}
