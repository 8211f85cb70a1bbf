/* The text form of a confinement policy, as it travels in CELLVM_CONFINE. */
#include "confine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int confine_policy_format(const struct confine_policy *p, char *out, size_t size)
{
        int n = snprintf(out, size,
                         "drop=%d,uid=%u,gid=%u,net=%s,agent=%d,spawner=%d,fsize=%" PRIu64
                         ",nofile=%" PRIu64 ",nproc=%" PRIu64 ",data=%" PRIu64,
                         p->drop_user ? 1 : 0, (unsigned)p->uid, (unsigned)p->gid,
                         p->net_none ? "none" : "allow", (int)p->agent_pid, (int)p->spawner_pid,
                         p->fsize, p->nofile, p->nproc, p->data);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int parse_u64(const char *s, size_t len, uint64_t *out)
{
        char buf[24];
        if (len == 0 || len >= sizeof(buf) || s[0] == '-')
                return -EINVAL;
        memcpy(buf, s, len);
        buf[len] = 0;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(buf, &end, 10);
        if (errno || *end)
                return -EINVAL;
        *out = v;
        return 0;
}

static bool key_is(const char *k, size_t klen, const char *name)
{
        return strlen(name) == klen && memcmp(k, name, klen) == 0;
}

int confine_policy_parse(const char *text, struct confine_policy *p)
{
        memset(p, 0, sizeof(*p));
        if (strlen(text) >= CONFINE_TEXT_MAX)
                return -EINVAL;
        for (const char *s = text; *s;) {
                size_t len = strcspn(s, ",");
                const char *eq = memchr(s, '=', len);
                if (!eq)
                        return -EINVAL;
                size_t klen = (size_t)(eq - s), vlen = len - klen - 1;
                const char *v = eq + 1;
                uint64_t n = 0;
                int rc = 0;
                if (key_is(s, klen, "net")) {
                        if (vlen == 4 && memcmp(v, "none", 4) == 0)
                                p->net_none = true;
                        else if (!(vlen == 5 && memcmp(v, "allow", 5) == 0))
                                return -EINVAL;
                } else if ((rc = parse_u64(v, vlen, &n)) < 0) {
                        return rc;
                } else if (key_is(s, klen, "drop")) {
                        p->drop_user = n != 0;
                } else if (key_is(s, klen, "uid") && n < UINT32_MAX) {
                        p->uid = (uid_t)n;
                } else if (key_is(s, klen, "gid") && n < UINT32_MAX) {
                        p->gid = (gid_t)n;
                } else if (key_is(s, klen, "agent") && n < INT32_MAX) {
                        p->agent_pid = (pid_t)n;
                } else if (key_is(s, klen, "spawner") && n < INT32_MAX) {
                        p->spawner_pid = (pid_t)n;
                } else if (key_is(s, klen, "fsize")) {
                        p->fsize = n;
                } else if (key_is(s, klen, "nofile")) {
                        p->nofile = n;
                } else if (key_is(s, klen, "nproc")) {
                        p->nproc = n;
                } else if (key_is(s, klen, "data")) {
                        p->data = n;
                } else {
                        return -EINVAL;
                }
                s += len;
                if (*s == ',')
                        s++;
        }
        /* Dropping to root would be no drop at all. */
        if (p->drop_user && (p->uid == 0 || p->gid == 0))
                return -EINVAL;
        return 0;
}
