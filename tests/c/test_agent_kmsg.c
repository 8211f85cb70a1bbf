/* Unit tests of the kernel log records the agent reads for the vmgenid driver's
 * VM-fork notice (agent/kmsg.c): only the kernel's own notice counts. */
#include "../../agent/kmsg.h"

#include <errno.h>
#include <string.h>

#include "check.h"

#define NOTICE "random: crng reseeded due to virtual machine fork"

static bool notice(const char *line)
{
        return kmsg_is_vmfork_notice(line, strlen(line));
}

static void test_parses_a_record(void)
{
        struct kmsg_record r;
        const char *line = "6,1234,1300458,-;random: crng init done\n SUBSYSTEM=x\n";
        CHECK(kmsg_parse(line, strlen(line), &r) == 0);
        CHECK(r.facility == 0 && r.level == 6);
        CHECK(r.text_len == strlen("random: crng init done"));
        CHECK(memcmp(r.text, "random: crng init done", r.text_len) == 0);
        /* Fields after the flags (a caller id) are allowed. */
        line = "13,7,99,c,caller=T1;hello";
        CHECK(kmsg_parse(line, strlen(line), &r) == 0);
        CHECK(r.facility == 1 && r.level == 5 && r.text_len == 5);
}

static void test_rejects_what_is_no_record(void)
{
        struct kmsg_record r;
        const char *bad[] = {"",
                             " SUBSYSTEM=acpi",
                             "no header at all",
                             "6,1,2,-",
                             "x6,1,2,-;text",
                             "6;text",
                             "99999999999,1,2,-;text",
                             NULL};
        for (const char **b = bad; *b; b++)
                CHECK(kmsg_parse(*b, strlen(*b), &r) == -EINVAL);
}

static void test_only_the_kernels_notice_counts(void)
{
        CHECK(notice("6,1200,1300458,-;" NOTICE));
        CHECK(notice("5,1200,1300458,-;" NOTICE "\n"));
        CHECK(notice("6,1200,1300458,-;" NOTICE "\n SUBSYSTEM=acpi\n"));
        /* Written by user space (facility LOG_USER and above: /dev/kmsg's writers). */
        CHECK(!notice("14,1200,1300458,-;" NOTICE));
        CHECK(!notice("30,1200,1300458,-;" NOTICE));
        /* Other messages, or the notice inside another one. */
        CHECK(!notice("6,1200,1300458,-;random: crng init done"));
        CHECK(!notice("6,1200,1300458,-;" NOTICE " (again)"));
        CHECK(!notice("6,1200,1300458,-;echo " NOTICE));
        CHECK(!notice(NOTICE));
        /* Only the first line is the record: a continuation cannot pose as one. */
        CHECK(!notice("6,1,2,-;x\n6,1200,1300458,-;" NOTICE));
        /* A length that cuts the notice short. */
        const char *line = "6,1200,1300458,-;" NOTICE;
        CHECK(!kmsg_is_vmfork_notice(line, strlen(line) - 1));
}

int main(void)
{
        test_parses_a_record();
        test_rejects_what_is_no_record();
        test_only_the_kernels_notice_counts();
        return check_report("test_agent_kmsg");
}
