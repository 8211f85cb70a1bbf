/* Unit tests for common/entropy.c: the hex seed decoding (hex_decode) and the argument
 * checks of entropy_seed. No seed is credited: that needs CAP_SYS_ADMIN and
 * would feed the host's pool (the VM tests cover it). */
#include "../../common/entropy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static void test_decodes_both_cases(void)
{
        uint8_t out[8];
        size_t len = 99;
        CHECK(hex_decode("00ff7Fa5", out, sizeof(out), &len) == 0);
        CHECK(len == 4 && out[0] == 0x00 && out[1] == 0xff && out[2] == 0x7f && out[3] == 0xa5);
        CHECK(hex_decode("", out, sizeof(out), &len) == 0 && len == 0);
}

static void test_rejects_malformed(void)
{
        uint8_t out[8];
        size_t len = 99;
        CHECK(hex_decode("abc", out, sizeof(out), &len) == -EINVAL);
        CHECK(hex_decode("0g", out, sizeof(out), &len) == -EINVAL);
        CHECK(hex_decode("0x12", out, sizeof(out), &len) == -EINVAL);
        CHECK(hex_decode("12 4", out, sizeof(out), &len) == -EINVAL);
        CHECK(len == 99); /* untouched on error */
}

static void test_output_bound(void)
{
        uint8_t out[4];
        size_t len = 0;
        CHECK(hex_decode("0102030405", out, sizeof(out), &len) == -E2BIG);
        CHECK(hex_decode("01020304", out, sizeof(out), &len) == 0 && len == 4);
        CHECK(out[3] == 4);
}

static void test_seed_lengths_are_checked_first(void)
{
        uint8_t big[ENTROPY_MAX_BYTES + 1];
        char hex[2 * (ENTROPY_MAX_BYTES + 1) + 1];

        memset(big, 0, sizeof(big));
        CHECK(entropy_seed(big, 0) == -EINVAL);
        CHECK(entropy_seed(big, sizeof(big)) == -EINVAL);
        memset(hex, 'a', sizeof(hex) - 1);
        hex[sizeof(hex) - 1] = '\0';
        CHECK(entropy_seed_hex(hex) == -E2BIG);
        CHECK(entropy_seed_hex("zz") == -EINVAL);
        CHECK(entropy_seed_hex("") == -EINVAL);
}

int main(void)
{
        test_decodes_both_cases();
        test_rejects_malformed();
        test_output_bound();
        test_seed_lengths_are_checked_first();
        return check_report("test_entropy");
}
