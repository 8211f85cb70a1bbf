/* Unit tests for cellvm-init's kernel command line tokenizer and the
 * cellvm.* configuration keys it feeds. */
#include "../../init/cmdline.h"
#include "../../init/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

struct warnings {
        int n;
        char last_key[CMDLINE_KEY_MAX];
};

static void collect(void *ctx, const char *key, const char *why)
{
        struct warnings *w = ctx;
        (void)why;
        w->n++;
        snprintf(w->last_key, sizeof(w->last_key), "%s", key);
}

static void test_tokens_split_on_whitespace(void)
{
        const char *cur = "  console=ttyS0\tquiet  reboot=k\n";
        struct cmdline_arg a;

        CHECK(cmdline_next(&cur, &a) == 1);
        CHECK(strcmp(a.key, "console") == 0 && a.has_value && strcmp(a.value, "ttyS0") == 0);
        CHECK(cmdline_next(&cur, &a) == 1);
        CHECK(strcmp(a.key, "quiet") == 0 && !a.has_value && a.value[0] == '\0');
        CHECK(cmdline_next(&cur, &a) == 1);
        CHECK(strcmp(a.key, "reboot") == 0 && strcmp(a.value, "k") == 0);
        CHECK(cmdline_next(&cur, &a) == 0);
        CHECK(cmdline_next(&cur, &a) == 0);
}

static void test_quotes_group_spaces_and_are_removed(void)
{
        const char *cur = "cellvm.agent_args=\"--listen unix:/a b\" \"x=y z\" e=";
        struct cmdline_arg a;

        CHECK(cmdline_next(&cur, &a) == 1);
        CHECK(strcmp(a.key, "cellvm.agent_args") == 0);
        CHECK(strcmp(a.value, "--listen unix:/a b") == 0);
        CHECK(cmdline_next(&cur, &a) == 1);
        CHECK(strcmp(a.key, "x") == 0 && strcmp(a.value, "y z") == 0);
        CHECK(cmdline_next(&cur, &a) == 1);
        CHECK(strcmp(a.key, "e") == 0 && a.has_value && a.value[0] == '\0');
        CHECK(cmdline_next(&cur, &a) == 0);
}

static void test_value_keeps_later_equals(void)
{
        const char *cur = "a=b=c";
        struct cmdline_arg a;

        CHECK(cmdline_next(&cur, &a) == 1);
        CHECK(strcmp(a.key, "a") == 0 && strcmp(a.value, "b=c") == 0);
}

static void test_double_dash_ends_kernel_part(void)
{
        const char *cur = "quiet -- cellvm.debug=1";
        struct cmdline_arg a;

        CHECK(cmdline_next(&cur, &a) == 1);
        CHECK(cmdline_next(&cur, &a) == 0);
}

/* The kernel (lib/cmdline.c next_arg) removes a quote only at the start of the
 * word or value and the word's last character; any other quote is kept, but
 * every quote toggles whether spaces split. Expected values are next_arg's. */
static void test_quotes_follow_the_kernel(void)
{
        static const struct {
                const char *line, *key, *value; /* value NULL: no '=' */
        } one[] = {
            {"k3=v\" \"q", "k3", "v\" \"q"},
            {"\"=x\"", "=x", NULL},
            {"\"a b\"c", "a b\"c", NULL},
            {"k=v\"", "k", "v\""},
            {"e=\" f=\"\"", "e", " f=\""},
            {"e=\" x y", "e", " x y"}, /* unterminated */
            {"e=\"", "e", ""},
        };
        static const struct {
                const char *key, *value;
        } many[] = {
            {"a", "b\"c d\"e"}, {"k", "v"},   {"k2", "v k3=v"}, {"quiet", NULL},
            {"x\"y z\"", "1"},  {"p", "q\""}, {"e", ""},
        };
        struct cmdline_arg a;
        const char *cur;

        for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
                cur = one[i].line;
                CHECK(cmdline_next(&cur, &a) == 1);
                CHECK(strcmp(a.key, one[i].key) == 0);
                CHECK(a.has_value == (one[i].value != NULL));
                CHECK(strcmp(a.value, one[i].value != NULL ? one[i].value : "") == 0);
                CHECK(cmdline_next(&cur, &a) == 0);
        }
        cur = "a=b\"c d\"e k=\"v\" k2=\"v k3=v\" \"quiet\" x\"y z\"=1 \"p=\"q\"\" e=\"\"";
        for (size_t i = 0; i < sizeof(many) / sizeof(many[0]); i++) {
                CHECK(cmdline_next(&cur, &a) == 1);
                CHECK(strcmp(a.key, many[i].key) == 0);
                CHECK(a.has_value == (many[i].value != NULL));
                CHECK(strcmp(a.value, many[i].value != NULL ? many[i].value : "") == 0);
        }
        CHECK(cmdline_next(&cur, &a) == 0);
}

static void test_mask_hides_values_in_place(void)
{
        char line[] = "quiet cellvm.entropy=00ff cellvm.entropyx=1 \"cellvm.entropy=ab\" "
                      "xcellvm.entropy=cd cellvm.entropy= cellvm.entropy";
        char want[] = "quiet cellvm.entropy=**** cellvm.entropyx=1 \"cellvm.entropy=**\" "
                      "xcellvm.entropy=cd cellvm.entropy= cellvm.entropy";

        CHECK(cmdline_mask(line, "cellvm.entropy") == 3);
        CHECK(strcmp(line, want) == 0);
        char empty[] = "";
        CHECK(cmdline_mask(empty, "k") == 0);
        char quoted[] = "k=\"a b\" x k=\"c";
        CHECK(cmdline_mask(quoted, "k") == 2);
        CHECK(strcmp(quoted, "k=\"***\" x k=\"*") == 0);
}

static void test_mask_env_copy(void)
{
        CHECK(setenv("CELLVM_CMDLINE", "a=1 cellvm.entropy=0102 b=2", 1) == 0);
        CHECK(cmdline_mask_env("cellvm.entropy") == 1);
        CHECK(strcmp(getenv("CELLVM_CMDLINE"), "a=1 cellvm.entropy=**** b=2") == 0);
        CHECK(unsetenv("CELLVM_CMDLINE") == 0);
        CHECK(cmdline_mask_env("cellvm.entropy") == 0);
}

static void test_overlong_value_is_skipped_not_truncated(void)
{
        size_t len = CMDLINE_VALUE_MAX + 10;
        char *line = malloc(len + 32);
        struct cmdline_arg a;

        CHECK(line != NULL);
        if (line == NULL)
                return;
        strcpy(line, "k=");
        memset(line + 2, 'v', len);
        strcpy(line + 2 + len, " next=1");
        const char *cur = line;
        CHECK(cmdline_next(&cur, &a) == -E2BIG);
        CHECK(cmdline_next(&cur, &a) == 1);
        CHECK(strcmp(a.key, "next") == 0);
        free(line);
}

static void test_defaults(void)
{
        struct init_config c;

        config_defaults(&c);
        CHECK(strcmp(c.agent, "/usr/bin/cellvm-agent") == 0);
        CHECK(c.vsock_port == 1024);
        CHECK(strcmp(c.serial, "cellvm") == 0);
        CHECK(strcmp(c.workdir, "/home/user") == 0);
        CHECK(c.net == NET_LOOPBACK);
        CHECK(!c.debug && !c.test && c.boot_timer == BOOT_TIMER_OFF);
        CHECK(c.shutdown == SHUTDOWN_REBOOT && c.deadline_ms == 0);
        CHECK(strcmp(c.root, "/dev/vda") == 0);
}

static void test_every_key(void)
{
        struct init_config c;
        struct warnings w = {0};
        const char *line =
            "console=ttyS0 root=/dev/vdb rootfstype=erofs cellvm.agent=/sbin/agent "
            "cellvm.agent_args=\"--preload numpy\" cellvm.vsock_port=52 cellvm.serial=none "
            "cellvm.workdir=/w cellvm.hostname=box cellvm.net=static cellvm.ip=10.0.0.2/24 "
            "cellvm.gateway=10.0.0.1 cellvm.dns=1.1.1.1,8.8.8.8 cellvm.mem_limit=512M "
            "cellvm.pids_limit=256 cellvm.entropy=00ff cellvm.debug cellvm.boot_timer=1 "
            "cellvm.boot_timer_addr=0x40000000 cellvm.test=1 cellvm.root_timeout_ms=100 "
            "cellvm.shutdown=poweroff cellvm.shutdown_timeout_ms=50 cellvm.restart_max_ms=9 "
            "cellvm.deadline_ms=20000";

        config_defaults(&c);
        CHECK(config_parse(&c, line, collect, &w) == 0);
        CHECK(w.n == 0);
        CHECK(strcmp(c.root, "/dev/vdb") == 0 && strcmp(c.rootfstype, "erofs") == 0);
        CHECK(strcmp(c.agent, "/sbin/agent") == 0);
        CHECK(strcmp(c.agent_args, "--preload numpy") == 0);
        CHECK(c.vsock_port == 52 && c.serial[0] == '\0' && strcmp(c.workdir, "/w") == 0);
        CHECK(strcmp(c.hostname, "box") == 0 && c.net == NET_STATIC);
        CHECK(strcmp(c.ip, "10.0.0.2/24") == 0 && strcmp(c.gateway, "10.0.0.1") == 0);
        CHECK(strcmp(c.dns, "1.1.1.1,8.8.8.8") == 0);
        CHECK(c.mem_limit == 512ull << 20 && c.pids_limit == 256);
        CHECK(strcmp(c.entropy, "00ff") == 0);
        CHECK(c.debug && c.test && c.boot_timer == BOOT_TIMER_MMIO);
        CHECK(c.boot_timer_addr == 0x40000000ull);
        CHECK(c.root_timeout_ms == 100 && c.shutdown == SHUTDOWN_POWEROFF);
        CHECK(c.shutdown_timeout_ms == 50 && c.restart_max_ms == 9);
        CHECK(c.deadline_ms == 20000);
}

static void test_bad_values_keep_defaults_and_warn(void)
{
        struct init_config c;
        struct warnings w = {0};

        config_defaults(&c);
        CHECK(config_parse(&c, "cellvm.vsock_port=abc cellvm.debug=maybe", collect, &w) == 2);
        CHECK(c.vsock_port == 1024 && !c.debug);
        CHECK(strcmp(w.last_key, "cellvm.debug") == 0);

        config_defaults(&c);
        w.n = 0;
        CHECK(config_parse(&c, "cellvm.vsock_port=4294967296", collect, &w) == 1);
        CHECK(c.vsock_port == 1024);

        config_defaults(&c);
        w.n = 0;
        CHECK(config_parse(&c, "cellvm.entropy=abc cellvm.entropy=zz", collect, &w) == 2);
        CHECK(c.entropy[0] == '\0');

        /* The deadline: a number of ms, not a duration with a unit, nor one
         * that overflows nanoseconds. */
        config_defaults(&c);
        w.n = 0;
        CHECK(c.deadline_ms == 0);
        CHECK(config_parse(&c,
                           "cellvm.deadline_ms=20s cellvm.deadline_ms=-1 "
                           "cellvm.deadline_ms=18446744073709552",
                           collect, &w) == 3);
        CHECK(c.deadline_ms == 0 && strcmp(w.last_key, "cellvm.deadline_ms") == 0);
        CHECK(config_parse(&c, "cellvm.deadline_ms=18446744073709", collect, &w) == 0);
        CHECK(c.deadline_ms == 18446744073709ull);
}

static void test_unknown_cellvm_key_warns_others_ignored(void)
{
        struct init_config c;
        struct warnings w = {0};

        config_defaults(&c);
        CHECK(config_parse(&c, "foo.bar=1 quiet cellvm.nope=1", collect, &w) == 1);
        CHECK(strcmp(w.last_key, "cellvm.nope") == 0);
}

static void test_static_net_without_ip_falls_back(void)
{
        struct init_config c;
        struct warnings w = {0};

        config_defaults(&c);
        CHECK(config_parse(&c, "cellvm.net=static", collect, &w) == 1);
        CHECK(c.net == NET_LOOPBACK);
        config_defaults(&c);
        CHECK(config_parse(&c, "cellvm.ip=10.0.0.2", collect, &w) == 1);
}

static void test_last_occurrence_wins(void)
{
        struct init_config c;
        struct warnings w = {0};

        config_defaults(&c);
        CHECK(config_parse(&c, "cellvm.debug=1 cellvm.debug=0", collect, &w) == 0);
        CHECK(!c.debug);
}

static void test_booleans(void)
{
        static const char *const yes[] = {"1", "yes", "on"}, *const no[] = {"0", "no", "off"};
        struct init_config c;
        struct warnings w = {0};
        char line[64];

        for (int i = 0; i < 3; i++) {
                config_defaults(&c);
                snprintf(line, sizeof(line), "cellvm.debug=%s cellvm.test=%s", yes[i], yes[i]);
                CHECK(config_parse(&c, line, collect, &w) == 0 && c.debug && c.test);
                snprintf(line, sizeof(line), "cellvm.debug=%s cellvm.test=%s", no[i], no[i]);
                CHECK(config_parse(&c, line, collect, &w) == 0 && !c.debug && !c.test);
        }
        config_defaults(&c);
        CHECK(config_parse(&c, "cellvm.debug=true cellvm.test=YES", collect, &w) == 2);
        CHECK(!c.debug && !c.test);
}

int main(void)
{
        test_tokens_split_on_whitespace();
        test_quotes_group_spaces_and_are_removed();
        test_value_keeps_later_equals();
        test_double_dash_ends_kernel_part();
        test_quotes_follow_the_kernel();
        test_mask_hides_values_in_place();
        test_mask_env_copy();
        test_overlong_value_is_skipped_not_truncated();
        test_defaults();
        test_booleans();
        test_every_key();
        test_bad_values_keep_defaults_and_warn();
        test_unknown_cellvm_key_warns_others_ignored();
        test_static_net_without_ip_falls_back();
        test_last_occurrence_wins();
        return check_report("test_init_cmdline");
}
