/* `cellvm fork ID`: E2B's fork for the CLI and the Python SDK (cellvm serve's
 * is serve_fork): the live sandbox saved once with its guest running on
 * (pause.h's cpause_save with a fork key), COUNT fork records of the paused
 * store made from that save (cpause_copy), then each resumed as a copy
 * (cellvm resume's work: a NEW_GENERATION of its own, its manifest's
 * fork_of) unless --paused leaves them for a later resume. */
#include "cli_fork.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cbor_util.h"
#include "cli_help.h"
#include "egress_keeper.h"
#include "msgtypes.h"
#include "cli_pause.h"
#include "cli_sandboxes.h"
#include "manifest.h"
#include "pause.h"
#include "paused.h"
#include "snapshot_qemu.h"

#define FORK_MAX 100

static const char fork_usage[] =
    "usage: cellvm fork [--json] [--count N] [--timeout S] [--envs JSON] [--paused] ID\n"
    "\n"
    "Forks live sandbox ID (its key or id, as cellvm ps shows them; a QEMU sandbox\n"
    "restored from a template): its guest is stopped and saved once, whole (devices and\n"
    "RAM), then runs on in the same VMM with its id, deadline and processes; N new\n"
    "sandboxes (default 1, at most 100) are made from that save, each a copy with its own\n"
    "id, fresh entropy, this host's clock and its random generators reseeded before its\n"
    "next cell (docs/SNAPSHOTS.md), the files, variables and processes of that moment,\n"
    "the source's metadata and egress rules. The source's guest clock stood still during\n"
    "the save: it is set again (SET_TIME), by the process holding its channel if one does\n"
    "(the SDK does).\n"
    "  --count N   how many forks (1..100)\n"
    "  --timeout S each fork's deadline, S seconds from its resume (default\n"
    "              $CELLVM_DEFAULT_TIMEOUT, 300; at most $CELLVM_MAX_TIMEOUT)\n"
    "  --envs JSON the sandbox's environment (an object) kept with each fork\n"
    "  --paused    leave the forks paused (records of the paused store, as cellvm pause\n"
    "              leaves one): cellvm resume ID or the SDK's connect runs each\n"
    "  --json      a JSON line per fork: its entry as cellvm resume --json prints it\n"
    "              (--paused: as cellvm ps --json lists a paused one)\n"
    "exit status: 0 every fork made, 1 no such live sandbox, 2 usage, 3 the save failed\n"
    "(the sandbox runs on; no fork) or a fork did not start (the others stand; said on\n"
    "stderr).\n";

struct fork_args {
        bool json, paused;
        unsigned count;
        double timeout_s;
        const char *envs;
        const char *id;
};

/* 0, -1 (--help printed) or SBX_EXIT_USAGE. */
static int parse(int argc, char **argv, struct fork_args *a)
{
        *a = (struct fork_args){.count = 1};
        if (sbx_default_timeout(&a->timeout_s) < 0)
                return SBX_EXIT_USAGE;
        for (int i = 1; i < argc; i++) {
                const char *o = argv[i];
                bool more = i + 1 < argc;
                char *end = NULL;
                if (cli_is_help(o)) {
                        fputs(fork_usage, stdout);
                        return -1;
                } else if (strcmp(o, "--json") == 0) {
                        a->json = true;
                } else if (strcmp(o, "--paused") == 0) {
                        a->paused = true;
                } else if (strcmp(o, "--count") == 0 && more) {
                        unsigned long n = strtoul(argv[++i], &end, 10);
                        if (*end || argv[i][0] == '-' || n < 1 || n > FORK_MAX) {
                                fprintf(stderr, "cellvm: --count takes 1 to %d\n", FORK_MAX);
                                return SBX_EXIT_USAGE;
                        }
                        a->count = (unsigned)n;
                } else if (strcmp(o, "--timeout") == 0 && more) {
                        a->timeout_s = strtod(argv[++i], &end);
                        if (*end || !(a->timeout_s > 0)) {
                                fputs("cellvm: --timeout takes seconds > 0\n", stderr);
                                return SBX_EXIT_USAGE;
                        }
                } else if (strcmp(o, "--envs") == 0 && more) {
                        if (!sbx_envs_arg_ok(argv[++i]))
                                return SBX_EXIT_USAGE;
                        a->envs = argv[i];
                } else if (o[0] != '-' && !a->id) {
                        a->id = o;
                } else {
                        fprintf(stderr, "cellvm: fork: %s %s\n%s",
                                o[0] == '-' ? "unknown option (or its value missing)"
                                            : "one ID only, not also",
                                o, fork_usage);
                        return SBX_EXIT_USAGE;
                }
        }
        if (!a->id) {
                fprintf(stderr, "cellvm: fork: no ID given\n%s", fork_usage);
                return SBX_EXIT_USAGE;
        }
        return 0;
}

/* The paused entry of record `dir` (named `key`) as cellvm ps --json lists it. */
static void print_paused(const char *dir, const char *key, const char *vmm)
{
        struct cpaused p = {0};
        snprintf(p.dir, sizeof(p.dir), "%s", dir);
        snprintf(p.key, sizeof(p.key), "%s", key);
        snprintf(p.sandbox_id, sizeof(p.sandbox_id), "%s", key);
        snprintf(p.vmm, sizeof(p.vmm), "%s", vmm);
        struct csm m;
        char err[PATH_MAX + 200];
        json_t *o = NULL;
        if (csm_init(&m) == 0 && csm_read(dir, &m, err, sizeof(err)) == 0)
                o = sbx_paused_json(&p, &m);
        csm_free(&m);
        if (!o)
                o = json_pack("{s:s, s:s, s:s}", "sandbox_id", key, "key", key, "record", dir);
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (text)
                puts(text);
        free(text);
        fflush(stdout);
}

void sbx_set_time_after_save(const struct creg_entry *e)
{
        if (!e->address[0] || sbx_held(e))
                return;
        struct cv_buf b;
        cv_buf_init(&b);
        csq_enc_set_time(&b);
        char why[512];
        if (sbx_guest_call(e, CV_MSG_SET_TIME, &b, why, sizeof(why)) < 0)
                fprintf(stderr, "cellvm: %s: its guest's clock was not set again: %s\n", e->key,
                        why);
        cv_buf_free(&b);
}

/* The fork records of `e` under `keys`: 0 with each made one's directory in
 * dirs[i] ("" for one that was not, said on stderr), or SBX_EXIT_FAILED when the
 * save failed (nothing made, the sandbox runs on). */
static int make_records(const char *root, const struct creg_entry *e, const char *metadata,
                        const struct fork_args *a, char (*keys)[64], char (*dirs)[PATH_MAX])
{
        char err[PATH_MAX + 512];
        struct creg_entry src_e = *e;
        src_e.started_ms = creg_now_ms(); /* a fork's lifetime starts now */
        struct cpause_src src = {.e = &src_e,
                                 .template_ = e->template_,
                                 .metadata = metadata,
                                 .envs = a->envs ? a->envs : "{}",
                                 .fork_key = keys[0]};
        if (cpause_save(root, &src, dirs[0], sizeof(dirs[0]), err, sizeof(err)) < 0) {
                fprintf(stderr, "cellvm: fork %s: %s\n", a->id, err);
                return SBX_EXIT_FAILED;
        }
        sbx_set_time_after_save(e);
        for (unsigned i = 1; i < a->count; i++)
                if (cpause_copy(root, dirs[0], keys[i], NULL, dirs[i], sizeof(dirs[i]), err,
                                sizeof(err)) < 0) {
                        fprintf(stderr, "cellvm: fork %s: fork %u of %u: %s\n", a->id, i + 1,
                                a->count, err);
                        dirs[i][0] = '\0';
                }
        /* Each fork has the source's egress rules (the VM's directory keeps them). */
        json_t *rules = e->dir[0] ? cegress_rules_load(e->dir) : NULL;
        for (unsigned i = 0; rules && i < a->count; i++)
                if (dirs[i][0] && cegress_rules_write(dirs[i], rules, err, sizeof(err)) < 0)
                        fprintf(stderr, "cellvm: fork %s: %s has no egress rules: %s\n", a->id,
                                keys[i], err);
        json_decref(rules);
        return 0;
}

int cmd_fork(int argc, char **argv)
{
        struct fork_args a;
        int rc = parse(argc, argv, &a);
        if (rc != 0)
                return rc < 0 ? 0 : rc;
        char root[PATH_MAX];
        if ((rc = cpaused_root(root, sizeof(root))) < 0) {
                fprintf(stderr, "cellvm: the paused store's directory: %s\n", strerror(-rc));
                return SBX_EXIT_FAILED;
        }
        struct creg_entry e;
        static char metadata[SBX_METADATA_MAX];
        rc = sbx_find(a.id, &e, metadata, sizeof(metadata));
        if (rc == -ENOENT) {
                char dir[PATH_MAX];
                bool paused = sbx_paused_find(a.id, root, sizeof(root), dir, sizeof(dir)) == 0;
                fprintf(stderr, "cellvm: fork %s: %s\n", a.id,
                        paused ? "it is paused: resume it first"
                               : "no live sandbox has that id or key");
                return 1;
        }
        if (rc < 0)
                return SBX_EXIT_FAILED;
        char(*keys)[64] = calloc(a.count, sizeof(*keys));
        char(*dirs)[PATH_MAX] = calloc(a.count, sizeof(*dirs));
        rc = keys && dirs ? 0 : -ENOMEM;
        for (unsigned i = 0; i < a.count && rc == 0; i++)
                rc = sbx_new_key(e.vmm, keys[i], sizeof(keys[i]));
        int status = rc < 0 ? SBX_EXIT_FAILED : make_records(root, &e, metadata, &a, keys, dirs);
        for (unsigned i = 0; i < a.count && status == 0; i++)
                if (!dirs[i][0])
                        status = SBX_EXIT_FAILED;
        for (unsigned i = 0; i < a.count && rc == 0 && dirs[i][0]; i++) {
                if (a.paused) {
                        if (a.json)
                                print_paused(dirs[i], keys[i], e.vmm);
                        else
                                printf("forked %s as %s (paused)\n", e.key, keys[i]);
                        continue;
                }
                int one = sbx_resume_print(root, dirs[i], keys[i], a.timeout_s, a.json, 0, 0);
                if (one != 0) {
                        /* A fork that did not start leaves no record behind. */
                        struct cpaused p = {0};
                        snprintf(p.dir, sizeof(p.dir), "%s", dirs[i]);
                        (void)cpaused_remove(root, &p);
                        status = SBX_EXIT_FAILED;
                }
                fflush(stdout);
        }
        free(keys);
        free(dirs);
        return status;
}
