/* Unit tests for common/parse_num.c: the numbers and sizes of cellvm-init's
 * command line and of cellvm-agent's options. */
#include "../../common/parse_num.h"

#include <errno.h>
#include <stdint.h>

#include "check.h"

static void test_parse_uint(void)
{
        uint64_t v = 0;

        CHECK(parse_uint("0", 10, &v) == 0 && v == 0);
        CHECK(parse_uint("1024", UINT64_MAX, &v) == 0 && v == 1024);
        CHECK(parse_uint("0xd0000000", UINT64_MAX, &v) == 0 && v == 0xd0000000ull);
        CHECK(parse_uint("0XfF", UINT64_MAX, &v) == 0 && v == 255);
        CHECK(parse_uint("18446744073709551615", UINT64_MAX, &v) == 0 && v == UINT64_MAX);
        CHECK(parse_uint("18446744073709551616", UINT64_MAX, &v) == -ERANGE);
        CHECK(parse_uint("11", 10, &v) == -ERANGE);
        v = 7;
        CHECK(parse_uint("", 10, &v) == -EINVAL);
        CHECK(parse_uint("0x", 10, &v) == -EINVAL);
        CHECK(parse_uint("12a", 100, &v) == -EINVAL);
        CHECK(parse_uint("-1", 100, &v) == -EINVAL);
        CHECK(parse_uint("+1", 100, &v) == -EINVAL);
        CHECK(parse_uint(" 1", 100, &v) == -EINVAL);
        CHECK(v == 7); /* untouched on error */
}

static void test_parse_size(void)
{
        uint64_t v = 0;

        CHECK(parse_size("123", &v) == 0 && v == 123);
        CHECK(parse_size("4k", &v) == 0 && v == 4096);
        CHECK(parse_size("64M", &v) == 0 && v == 64ull << 20);
        CHECK(parse_size("1g", &v) == 0 && v == 1ull << 30);
        CHECK(parse_size("2G", &v) == 0 && v == 2ull << 30);
        CHECK(parse_size("", &v) == -EINVAL);
        CHECK(parse_size("M", &v) == -EINVAL);
        CHECK(parse_size("1.5G", &v) == -EINVAL);
        CHECK(parse_size("64MB", &v) == -EINVAL);
        CHECK(parse_size("1T", &v) == -EINVAL);
        CHECK(parse_size("-1M", &v) == -EINVAL);
        CHECK(parse_size(" 64M", &v) == -EINVAL);
        CHECK(parse_size("99999999999999999999", &v) == -ERANGE);
        CHECK(parse_size("17179869184G", &v) == -ERANGE);
        CHECK(parse_size("17179869183G", &v) == 0 && v == 17179869183ull << 30);
        CHECK(parse_size("123456789012345678901234567890123", &v) == -EINVAL); /* too long */
}

int main(void)
{
        test_parse_uint();
        test_parse_size();
        return check_report("test_parse_num");
}
