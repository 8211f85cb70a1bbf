/* The CLI's templates (docs/SNAPSHOTS.md): `cellvm run` and `cellvm shell`
 * restore their VM from one by default (and `cellvm create`, which the Python
 * SDK's create() runs), and `cellvm snapshot` manages them. */
#ifndef CELLVM_CLIENT_CLI_SNAPSHOT_H
#define CELLVM_CLIENT_CLI_SNAPSHOT_H

#include <limits.h>
#include <stdbool.h>

#include "cellvm.h"
#include "cli_sandboxes.h"
#include "snapshot_qemu.h"
#include "vmm.h"

enum snap_mode { SNAP_OFF, SNAP_AUTO, SNAP_DIR };

/* $CELLVM_SNAPSHOT: unset, "", 1, on, yes, true, auto: SNAP_AUTO; 0, off,
 * no, false, cold: SNAP_OFF; anything else -EINVAL (said on stderr). */
int snap_env_mode(enum snap_mode *mode);

/* How a restore went (cellvm create --json prints it as "restore"). */
struct snap_report {
        bool restored;          /* from a template (else a cold boot, or none) */
        struct csq_stages st;   /* ns after the VMM was spawned */
        uint64_t deadline;      /* SET_DEADLINE answered, ns after the spawn */
        char snapdir[PATH_MAX]; /* the template's snapshot restored, or "" */
};

struct snap_run {
        const struct cvm_opts *vm;  /* run's / shell's VM options */
        unsigned user_mb;           /* cellvm.mem_limit */
        double lifetime_s;          /* the sandbox's own lifetime (SET_DEADLINE, registry) */
        enum snap_mode mode;        /* AUTO or DIR */
        const char *dir;            /* SNAP_DIR: the template that must be used */
        bool verbose;               /* say how the VM started */
        struct snap_report *report; /* filled when not NULL */
        const char *key;            /* the registry key it takes (a resume's), NULL: a new one */
        const char *template_;      /* the E2B template name its entry names, or NULL */
        char *cold_why;             /* not NULL: why a launch has no template goes here, */
        size_t cold_why_len;        /* unsaid (the caller says it if the cold boot starts) */
};

/* The VM of run/shell from a template: found (or built, saying so) and
 * restored, HELLO, NEW_GENERATION, SET_DEADLINE, its registry entry. 0 with
 * *c connected; 1 when it is to boot cold instead (a warning said why; the
 * template is removed when it cannot be restored); a negative errno when it
 * must not start at all (SNAP_DIR's template unusable, the limits; said on
 * stderr). No process is left on failure. */
int snap_restore_vm(const struct snap_run *r, struct sbx_rec *rec, struct cvm *vm, struct cvc **c);

/* `cellvm snapshot create|check|manifest` for these VM options; `vm` is the
 * builder's (for the signal handlers). Exit statuses. */
/* force_hint follows "up to date" (the command's --force, or ""). */
int snap_cmd_create(const struct cvm_opts *o, unsigned user_mb, bool force, const char *force_hint,
                    struct cvm *vm);
int snap_cmd_check(const struct cvm_opts *o, unsigned user_mb);
int snap_cmd_manifest(const struct cvm_opts *o, unsigned user_mb);
/* `cellvm snapshot list` and `cellvm snapshot remove NAME...|--all`. */
int snap_cmd_list(void);
int snap_cmd_remove(int argc, char **argv);

#endif
