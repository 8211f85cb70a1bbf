/* E2B's snapshots API for the CLI and the Python SDK (cellvm serve's is
 * serve_snapshots.c; both on kept_snapshots.h): `cellvm create-snapshot`,
 * `list-snapshots`, `delete-snapshot`, and `cellvm create --template REF`
 * when REF names a kept snapshot. */
#include "cli_snapshots.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_fork.h"
#include "cli_help.h"
#include "cli_pause.h"
#include "cli_sandboxes.h"
#include "egress_keeper.h"
#include "pause.h"
#include "paused.h"
#include "kept_snapshots.h"

static const char create_usage[] =
    "usage: cellvm create-snapshot [--json] [--name NAME] ID\n"
    "\n"
    "E2B's create_snapshot(): keeps live sandbox ID's whole state (a QEMU sandbox\n"
    "restored from a template; its key or id, as cellvm ps shows them) for new\n"
    "sandboxes. It is saved as a fork's source is (it runs on; its clock is set again)\n"
    "into the snapshot store ($CELLVM_SNAPSHOTS_DIR, else\n"
    "$XDG_STATE_HOME/cellvm/snapshots), where it outlives the sandbox. `cellvm create\n"
    "--template SNAPSHOT_ID` (E2B's Sandbox.create(snapshot_id)) then makes a sandbox of\n"
    "it, as many times as asked, each a copy of its own (docs/SNAPSHOTS.md).\n"
    "  --name NAME  1 to 128 letters, digits, '-', '_' or '.' (not first); a name given\n"
    "               again names the new snapshot, and the older one is dropped\n"
    "  --json       E2B's SnapshotInfo: {\"snapshotID\", \"names\"}\n"
    "exit status: 0, 1 no such live sandbox, 2 usage, 3 the save failed (it runs on).\n";

static const char list_usage[] =
    "usage: cellvm list-snapshots [--json] [--sandbox ID] [--name REF]\n"
    "\n"
    "The kept snapshots, newest first (E2B's list_snapshots()): of sandbox ID only, or\n"
    "the one REF names (its id or name, with :default or without).\n"
    "  --json  one JSON array: E2B's SnapshotInfo with sandbox_id, key and created_ms\n";

static const char delete_usage[] =
    "usage: cellvm delete-snapshot REF\n"
    "\n"
    "Drops kept snapshot REF (its id or name; E2B's delete_snapshot()). Sandboxes made\n"
    "of it run on. exit status: 0, 1 no such snapshot, 2 usage, 3 it was not removed.\n";

static bool help_asked(int argc, char **argv, const char *usage)
{
        for (int i = 1; i < argc; i++)
                if (cli_is_help(argv[i])) {
                        fputs(usage, stdout);
                        return true;
                }
        return false;
}

static int print_json(json_t *o)
{
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!text) {
                fputs("cellvm: out of memory\n", stderr);
                return SBX_EXIT_FAILED;
        }
        puts(text);
        free(text);
        return 0;
}

int cmd_create_snapshot(int argc, char **argv)
{
        if (help_asked(argc, argv, create_usage))
                return 0;
        static const struct option opts[] = {
            {"json", no_argument, NULL, 'j'}, {"name", required_argument, NULL, 'n'}, {0}};
        bool json = false;
        struct ckept sn = {.created_ms = creg_now_ms()};
        int c;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
                if (c == 'j') {
                        json = true;
                } else if (c == 'n' && ckept_name_ok(optarg)) {
                        snprintf(sn.name, sizeof(sn.name), "%s", optarg);
                } else {
                        fprintf(stderr, "cellvm: create-snapshot: %s\n%s",
                                c == 'n' ? "a bad --name" : "an unknown option", create_usage);
                        return SBX_EXIT_USAGE;
                }
        }
        if (optind != argc - 1) {
                fprintf(stderr, "cellvm: create-snapshot: %s\n%s",
                        optind == argc ? "no ID given" : "one ID only", create_usage);
                return SBX_EXIT_USAGE;
        }
        const char *id = argv[optind];
        struct creg_entry e;
        static char metadata[SBX_METADATA_MAX];
        int rc = sbx_find(id, &e, metadata, sizeof(metadata));
        if (rc == -ENOENT) {
                fprintf(stderr, "cellvm: create-snapshot %s: no live sandbox has that id or key\n",
                        id);
                return 1;
        }
        if (rc < 0)
                return SBX_EXIT_FAILED;
        char root[PATH_MAX], dir[PATH_MAX], err[PATH_MAX + 512];
        if ((rc = ckept_root(root, sizeof(root))) < 0 ||
            (rc = sbx_new_key(e.vmm, sn.key, sizeof(sn.key))) < 0) {
                fprintf(stderr, "cellvm: create-snapshot %s: the store: %s\n", id, strerror(-rc));
                return SBX_EXIT_FAILED;
        }
        snprintf(sn.sandbox, sizeof(sn.sandbox), "%s", e.key);
        struct creg_entry src_e = e;
        src_e.started_ms = creg_now_ms(); /* a sandbox made of it starts then */
        struct cpause_src src = {.e = &src_e,
                                 .template_ = e.template_,
                                 .metadata = metadata[0] ? metadata : "{}",
                                 .envs = "{}",
                                 .fork_key = sn.key};
        rc = cpause_save(root, &src, dir, sizeof(dir), err, sizeof(err));
        if (rc == 0)
                sbx_set_time_after_save(&e);
        if (rc == 0)
                rc = ckept_publish(dir, &sn, err, sizeof(err));
        if (rc < 0) {
                fprintf(stderr, "cellvm: create-snapshot %s: %s\n", id, err);
                return SBX_EXIT_FAILED;
        }
        if (json)
                return print_json(ckept_info(&sn));
        printf("snapshot %s%s%s of %s kept\n", sn.key, sn.name[0] ? " named " : "", sn.name, e.key);
        return 0;
}

int cmd_list_snapshots(int argc, char **argv)
{
        if (help_asked(argc, argv, list_usage))
                return 0;
        bool json = false;
        const char *sandbox = NULL, *name = NULL;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0) {
                        json = true;
                } else if (strcmp(argv[i], "--sandbox") == 0 && i + 1 < argc) {
                        sandbox = argv[++i];
                } else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
                        name = argv[++i];
                } else {
                        fprintf(stderr, "cellvm: list-snapshots: unknown argument %s\n%s", argv[i],
                                list_usage);
                        return SBX_EXIT_USAGE;
                }
        }
        char bare[CKEPT_NAME_MAX + 1] = "";
        bool none = name && !ckept_bare_ref(name, bare, sizeof(bare));
        struct ckept *v;
        size_t n;
        int rc = ckept_list(&v, &n);
        if (rc < 0) {
                fprintf(stderr, "cellvm: list-snapshots: %s\n", strerror(-rc));
                return SBX_EXIT_FAILED;
        }
        json_t *arr = json ? json_array() : NULL;
        for (size_t i = 0; !none && i < n; i++) {
                if ((sandbox && strcmp(sandbox, v[i].sandbox) != 0) ||
                    (bare[0] && !ckept_is(&v[i], bare)))
                        continue;
                json_t *o = ckept_info(&v[i]);
                if (json && o) {
                        json_object_set_new(o, "sandbox_id", json_string(v[i].sandbox));
                        json_object_set_new(o, "key", json_string(v[i].key));
                        json_object_set_new(o, "created_ms", json_integer(v[i].created_ms));
                        json_array_append_new(arr, o);
                        continue;
                }
                if (o)
                        printf("%-40s %-24s %s\n",
                               json_string_value(json_object_get(o, "snapshotID")), v[i].sandbox,
                               v[i].key);
                json_decref(o);
        }
        free(v);
        return json ? print_json(arr) : 0;
}

int cmd_delete_snapshot(int argc, char **argv)
{
        if (help_asked(argc, argv, delete_usage))
                return 0;
        if (argc != 2) {
                fprintf(stderr, "cellvm: delete-snapshot: %s\n%s",
                        argc < 2 ? "no REF given" : "one REF only", delete_usage);
                return SBX_EXIT_USAGE;
        }
        int rc = ckept_drop(argv[1]);
        if (rc == -ENOENT) {
                fprintf(stderr, "cellvm: delete-snapshot %s: no such snapshot\n", argv[1]);
                return 1;
        }
        if (rc < 0) {
                fprintf(stderr, "cellvm: delete-snapshot %s: %s\n", argv[1], strerror(-rc));
                return SBX_EXIT_FAILED;
        }
        return 0;
}

bool sbx_find_snapshot(const char *template_, struct ckept *sn)
{
        /* The SDK names an image directory by its path here too: a path that
         * exists is that, never a snapshot. */
        return template_ && !ckept_image_name(template_) && access(template_, F_OK) != 0 &&
               ckept_find(template_, sn) == 0;
}

/* The copy in `dir` removed under the paused store's lock, as a fork's. */
static void remove_copy(const char *root, const char *dir)
{
        struct cpaused p = {0};
        snprintf(p.dir, sizeof(p.dir), "%s", dir);
        (void)cpaused_remove(root, &p);
}

int sbx_create_from_snapshot(const struct ckept *sn, const char *metadata, json_t *egress,
                             bool pause_at_timeout, double timeout_s, int pass_fd, pid_t holder)
{
        char key[72] = "", dir[PATH_MAX] = "", root[PATH_MAX], err[PATH_MAX + 512];
        struct ckept_create c = {.metadata = metadata, .pause_at_timeout = pause_at_timeout};
        int rc = cpaused_root(root, sizeof(root));
        if (rc < 0)
                snprintf(err, sizeof(err), "the paused store: %s", strerror(-rc));
        else
                rc = ckept_copy(sn, &c, key, sizeof(key), dir, sizeof(dir), err, sizeof(err));
        if (rc == 0 && egress) /* its rules go with the resume (sbx_resume_print) */
                rc = cegress_rules_write(dir, egress, err, sizeof(err));
        if (rc < 0) {
                fprintf(stderr, "cellvm: create --template %s: %s\n",
                        sn->name[0] ? sn->name : sn->key, err);
                if (dir[0]) /* a copy that was made goes */
                        remove_copy(root, dir);
                return rc == -ENOENT ? SBX_EXIT_USAGE : SBX_EXIT_FAILED;
        }
        int status = sbx_resume_print(root, dir, key, timeout_s, true, pass_fd, holder);
        if (status != 0) /* a sandbox that did not start leaves no record */
                remove_copy(root, dir);
        return status;
}
