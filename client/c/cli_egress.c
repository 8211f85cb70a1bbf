/* `cellvm egress`: shows or replaces the egress rules of a live sandbox of
 * `cellvm create` (cli_egress.h); its egress keeper decides by them. */
#include "cli_egress.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_help.h"
#include "cli_sandboxes.h"
#include "egress_keeper.h"
#include "registry.h"
#include "serve_egress.h"

static const char usage[] =
    "usage: cellvm egress [--json] ID [RULES]\n"
    "\n"
    "The egress rules of live sandbox ID (a QEMU sandbox of cellvm create, the\n"
    "Python SDK's; docs/NETWORK.md). Without RULES: prints them, as\n"
    "{\"network\": {...}, \"allow_internet_access\": B} ({} when it has none). With RULES:\n"
    "that shape, or E2B's network object alone as JSON, e.g.\n"
    "  '{\"allowOut\": [\"pypi.org\", \"*.pythonhosted.org\"], \"denyOut\": [\"0.0.0.0/0\"]}'\n"
    "(allow_out/deny_out too; \"allow_internet_access\": false beside them denies every\n"
    "address not allowed; any other key is refused): they replace its rules for\n"
    "every connection made from then on, and its egress keeper is started if it had\n"
    "none. User code reaches the outside through the guest's proxy: processes\n"
    "started with the variables --json prints (\"envs\") use it.\n"
    "  --json  print {\"sandbox_id\", \"rules\", \"envs\"}\n"
    "exit status: 0 done, 1 no such live sandbox, 2 usage or bad rules, 3 failed.\n";

json_t *cli_egress_envs(void)
{
        json_t *envs = json_object();
        if (envs && serve_egress_envs(envs) < 0) {
                json_decref(envs);
                return NULL;
        }
        return envs;
}

int cmd_egress(int argc, char **argv)
{
        bool json = false;
        int i = 1;
        for (; i < argc && argv[i][0] == '-'; i++) {
                if (strcmp(argv[i], "--json") == 0) {
                        json = true;
                } else if (cli_is_help(argv[i])) {
                        fputs(usage, stdout);
                        return 0;
                } else {
                        fprintf(stderr, "cellvm: egress: unknown option %s\n%s", argv[i], usage);
                        return 2;
                }
        }
        if (argc - i < 1 || argc - i > 2) {
                fprintf(stderr, "cellvm: egress: %s\n%s",
                        argc - i < 1 ? "no ID given" : "takes ID and at most one RULES", usage);
                return 2;
        }
        const char *id = argv[i], *text = argc - i == 2 ? argv[i + 1] : NULL;
        char why[600];
        json_t *rules = NULL;
        if (text && cegress_rules_parse(text, &rules, why, sizeof(why)) < 0) {
                fprintf(stderr, "cellvm: egress %s: %s\n", id, why);
                return 2;
        }
        struct creg_entry e;
        static char metadata[64 * 1024];
        int rc = sbx_find(id, &e, metadata, sizeof(metadata));
        if (rc < 0) {
                json_decref(rules);
                fprintf(stderr, "cellvm: egress %s: %s\n", id,
                        rc == -ENOENT ? "no live sandbox has that id or key" : strerror(-rc));
                return rc == -ENOENT ? 1 : 3;
        }
        if (rules) {
                if (!e.keeper_pid) { /* serve's, or cellvm run's: not ours to change */
                        fprintf(stderr,
                                "cellvm: egress %s: not a sandbox of cellvm create (one of "
                                "cellvm serve takes PUT /sandboxes/%s/network)\n",
                                id, e.key);
                        json_decref(rules);
                        return 3;
                }
                if (strcmp(e.vmm, "qemu") != 0 || !e.dir[0]) {
                        fprintf(stderr,
                                "cellvm: egress %s: egress rules need QEMU's egress port; this "
                                "sandbox runs under %s (docs/NETWORK.md)\n",
                                id, e.vmm);
                        json_decref(rules);
                        return 3;
                }
                rc = cegress_rules_write(e.dir, rules, why, sizeof(why));
                pid_t keeper = rc < 0 ? rc : cegress_keeper_start(e.key, e.dir);
                if (rc < 0 || keeper < 0) {
                        fprintf(stderr, "cellvm: egress %s: %s\n", id,
                                rc < 0 ? why : strerror(-keeper));
                        json_decref(rules);
                        return 3;
                }
        } else {
                rules = cegress_rules_load(e.dir);
                /* No rules is {} however they were kept (an empty network). */
                json_t *net = json_object_get(rules, "network");
                if (net &&
                    (json_is_null(net) || (json_is_object(net) && json_object_size(net) == 0)))
                        (void)json_object_del(rules, "network");
        }
        if (json) {
                json_t *o = json_pack("{s:s, s:o, s:o}", "sandbox_id", e.key, "rules",
                                      rules ? rules : json_object(), "envs", cli_egress_envs());
                char *out = o ? json_dumps(o, JSON_COMPACT) : NULL;
                json_decref(o);
                if (!out)
                        return 3;
                puts(out);
                free(out);
        } else if (!text) {
                json_t *shown = rules ? rules : json_object();
                char *out = shown ? json_dumps(shown, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
                json_decref(shown);
                if (!out)
                        return 3;
                puts(out);
                free(out);
        } else {
                json_decref(rules);
        }
        return 0;
}
