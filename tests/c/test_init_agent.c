/* Unit tests for cellvm-init's agent argv (agent_argv): the listeners and
 * workdir from the configuration, then cellvm.agent_args split on whitespace
 * with '...' quoting. */
#include "../../init/agent.h"
#include "../../init/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static char *argv[AGENT_MAX_ARGS];
static char buf[2048];

/* A configuration with no listener or workdir: argv is the agent plus args. */
static void bare(struct init_config *c, const char *args)
{
        config_defaults(c);
        c->vsock_port = 0;
        c->serial[0] = '\0';
        c->workdir[0] = '\0';
        snprintf(c->agent_args, sizeof(c->agent_args), "%s", args);
}

/* argv[1..] equal to want (NULL-terminated) and argv NULL-terminated. */
static int args_are(int argc, const char *const *want)
{
        int n = 0;
        while (want[n] != NULL)
                n++;
        if (argc != n + 1 || argv[argc] != NULL)
                return 0;
        for (int i = 0; i < n; i++)
                if (strcmp(argv[i + 1], want[i]) != 0)
                        return 0;
        return 1;
}

static void test_defaults(void)
{
        struct init_config c;
        config_defaults(&c);
        int n = agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf));
        CHECK(n == 7);
        CHECK(strcmp(argv[0], "/usr/bin/cellvm-agent") == 0);
        const char *const want[] = {
            "--listen",  "vsock:1024", "--listen", "serial:/dev/virtio-ports/cellvm",
            "--workdir", "/home/user", NULL};
        CHECK(args_are(n, want));
}

static void test_disabled_listeners_and_workdir_are_omitted(void)
{
        struct init_config c;
        bare(&c, "");
        int n = agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf));
        CHECK(n == 1 && argv[1] == NULL);
        bare(&c, "");
        c.vsock_port = 52;
        n = agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf));
        const char *const want[] = {"--listen", "vsock:52", NULL};
        CHECK(args_are(n, want));
}

static void test_words_split_on_spaces_and_tabs(void)
{
        struct init_config c;
        bare(&c, "  --preload numpy\t-x  ");
        int n = agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf));
        const char *const want[] = {"--preload", "numpy", "-x", NULL};
        CHECK(args_are(n, want));
}

static void test_single_quotes(void)
{
        struct init_config c;
        bare(&c, "--preload '' -c 'a b' x'y z'w ''''");
        int n = agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf));
        const char *const want[] = {"--preload", "", "-c", "a b", "xy zw", "", NULL};
        CHECK(args_are(n, want));

        bare(&c, "'a\tb'  'c''d'");
        n = agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf));
        const char *const want2[] = {"a\tb", "cd", NULL};
        CHECK(args_are(n, want2));
}

static void test_unterminated_quote_is_an_error(void)
{
        struct init_config c;
        bare(&c, "--ok 'never closed");
        CHECK(agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf)) == -EINVAL);
        bare(&c, "'");
        CHECK(agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf)) == -EINVAL);
}

static void test_limits(void)
{
        struct init_config c;
        char small[16];

        config_defaults(&c);
        /* 7 arguments and the NULL need 8 slots. */
        CHECK(agent_argv(&c, argv, 7, buf, sizeof(buf)) == -E2BIG);
        CHECK(agent_argv(&c, argv, 8, buf, sizeof(buf)) == 7);
        CHECK(agent_argv(&c, argv, AGENT_MAX_ARGS, small, sizeof(small)) == -E2BIG);

        bare(&c, "");
        for (int i = 0; i < AGENT_MAX_ARGS; i++)
                strcat(c.agent_args, "a ");
        CHECK(agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf)) == -E2BIG);
        c.agent_args[2 * (AGENT_MAX_ARGS - 2)] = '\0';
        CHECK(agent_argv(&c, argv, AGENT_MAX_ARGS, buf, sizeof(buf)) == AGENT_MAX_ARGS - 1);
        CHECK(argv[AGENT_MAX_ARGS - 1] == NULL);
}

int main(void)
{
        test_defaults();
        test_disabled_listeners_and_workdir_are_omitted();
        test_words_split_on_spaces_and_tabs();
        test_single_quotes();
        test_unterminated_quote_is_an_error();
        test_limits();
        return check_report("test_init_agent");
}
