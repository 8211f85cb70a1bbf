/* The text form of a confinement policy (confine/confine_policy.c): round trip and rejects. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../confine/confine.h"

static void test_round_trip(void)
{
        struct confine_policy p = {.drop_user = true,
                                   .uid = 1000,
                                   .gid = 1001,
                                   .net_none = true,
                                   .agent_pid = 42,
                                   .spawner_pid = 43,
                                   .fsize = 1u << 20,
                                   .nofile = 8192,
                                   .nproc = 64,
                                   .data = 512ull << 20};
        char text[CONFINE_TEXT_MAX];
        assert(confine_policy_format(&p, text, sizeof(text)) == 0);
        struct confine_policy q;
        assert(confine_policy_parse(text, &q) == 0);
        assert(q.drop_user && q.uid == 1000 && q.gid == 1001 && q.net_none && q.agent_pid == 42);
        assert(q.spawner_pid == 43);
        assert(q.fsize == 1u << 20 && q.nofile == 8192 && q.nproc == 64 && q.data == 512ull << 20);
}

static void test_network_allow(void)
{
        struct confine_policy q;
        assert(confine_policy_parse("net=allow,drop=0", &q) == 0);
        assert(!q.net_none && !q.drop_user);
}

static void test_rejects(void)
{
        struct confine_policy q;
        /* A policy is applied whole or not at all. */
        assert(confine_policy_parse("net=maybe", &q) == -EINVAL);
        assert(confine_policy_parse("bogus=1", &q) == -EINVAL);
        assert(confine_policy_parse("uid", &q) == -EINVAL);
        assert(confine_policy_parse("uid=-1", &q) == -EINVAL);
        assert(confine_policy_parse("uid=12x", &q) == -EINVAL);
        assert(confine_policy_parse("fsize=99999999999999999999999", &q) == -EINVAL);
        /* Dropping to root is no drop. */
        assert(confine_policy_parse("drop=1,uid=0,gid=1000", &q) == -EINVAL);
        char small[8];
        struct confine_policy p = {0};
        assert(confine_policy_format(&p, small, sizeof(small)) == -ENAMETOOLONG);
}

int main(void)
{
        test_round_trip();
        test_network_allow();
        test_rejects();
        printf("test_confine_policy: ok\n");
        return 0;
}
