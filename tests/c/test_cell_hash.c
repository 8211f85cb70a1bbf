/*
 * Unit tests for the cell file-name hash (python-embed/cell_hash.c). The
 * expected numbers are ipykernel 6.17's own: ipykernel.compiler.murmur2_x86(s,
 * get_tmp_hash_seed()), one per length class (0 to 3 tail bytes) and UTF-8.
 */
#include "../../python-embed/cell_hash.h"

#include <string.h>

#include "check.h"

static uint32_t hash(const char *s)
{
        return cell_hash_murmur2((const unsigned char *)s, strlen(s), CELL_HASH_SEED);
}

static void test_tail_lengths(void)
{
        CHECK(hash("") == 3990065800u);
        CHECK(hash("a") == 2167009006u);
        CHECK(hash("ab") == 2805137849u);
        CHECK(hash("abc") == 3350977461u);
        CHECK(hash("abcd") == 804720481u);
}

static void test_cells(void)
{
        CHECK(hash("1+1") == 225133317u);
        CHECK(hash("print(\"hello\")\n") == 1717977610u);
        CHECK(hash("x = 3\nx") == 1519898192u);
        CHECK(hash("import numpy as np\nnp.arange(10).sum()") == 2286316951u);
}

static void test_utf8_bytes(void)
{
        /* café = "東"\n: ipykernel hashes the UTF-8 encoding, not code points. */
        CHECK(hash("caf\xc3\xa9 = \"\xe6\x9d\xb1\"\n") == 194606789u);
}

int main(void)
{
        test_tail_lengths();
        test_cells();
        test_utf8_bytes();
        return check_report("test_cell_hash");
}
