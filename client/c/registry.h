/*
 * The per-user registry of live sandboxes (format in docs/VMM.md, "Live
 * sandboxes"; the Python SDK sees it through the CLI, `cellvm ps --json`): one `<key>.sandbox` file
 * of `name=value` lines per VMM in the runtime directory ($CELLVM_RUNTIME_DIR, else
 * $XDG_RUNTIME_DIR/cellvm, else /tmp/cellvm-<uid>), writers under an flock of `<dir>/lock`. A VMM
 * is its pid plus its start time (field 22 of /proc/PID/stat): a reused pid is never signalled. A
 * sweep removes damaged entries (never trusting them), stale ones (VMM exited, with its temp
 * directory) and kills VMMs past deadline + grace ($CELLVM_DEADLINE_GRACE, 10 s).
 */
#ifndef CELLVM_CLIENT_REGISTRY_H
#define CELLVM_CLIENT_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CREG_MAX_ENTRIES 256
#define CREG_DEFAULT_GRACE_S 10.0
#define CREG_DEFAULT_MAX_SANDBOXES 20
#define CREG_DEFAULT_MAX_TIMEOUT_S (24.0 * 3600)
/* What a sandbox paused at its timeout (on_timeout "pause") is given beyond
 * its deadline before a sweep kills it: the time a pause may take (its
 * guest's own deadline is later by as much). */
#define CREG_PAUSE_MARGIN_S 120.0

struct creg_entry {
        char key[72];
        char id[320];
        char vmm[32];
        char accel[16];
        char address[320];
        char dir[256];
        char image[512];
        char template_[256];
        char network[8]; /* "user" (QEMU's user-mode NAT) or "none"; "" read as none */
        /* E2B's lifecycle onTimeout: "pause" (its keeper pauses it at the
         * deadline: keeper.c), else "kill" ("" read as kill). */
        char on_timeout[8];
        pid_t pid;
        uint64_t pid_start;
        int64_t started_ms;
        int64_t deadline_ms;
        unsigned memory_mb, vcpus;
        pid_t creator_pid;
        uint64_t creator_start;
        pid_t keeper_pid; /* cellvm create's keeper (keeper.h), or 0 */
        pid_t holder_pid; /* the process that holds the agent's channel (SDK), or 0 */
        uint64_t holder_start;
        /* The `metadata` line's JSON object as creg_write writes it (not
         * owned; NULL: "{}"); creg_parse leaves it NULL (sbx_find reads it). */
        const char *metadata;
};

struct creg {
        char dir[512];
        int lock_fd; /* -1 when not locked */
};

/* Opens (creating 0700) the user's registry directory; refuses one owned by
 * another user or writable by others. `err` says why on failure. */
int creg_open(struct creg *r, char *err, size_t errlen);
int creg_lock(struct creg *r);
void creg_unlock(struct creg *r);

/* Field 22 of /proc/PID/stat; 0 if the process is gone or a zombie. */
uint64_t creg_proc_start(pid_t pid);
int64_t creg_now_ms(void);
double creg_grace_s(void);
unsigned creg_max_sandboxes(void);
double creg_max_timeout_s(void);

/* Parses an entry's text (NUL-terminated); `key` is its file's. 0 or -EINVAL
 * with `why` set. */
int creg_parse(const char *text, const char *key, struct creg_entry *e, char *why, size_t whylen);
/* Writes `e` (tmp file + rename). Call locked. */
int creg_write(struct creg *r, const struct creg_entry *e);
/* Removes the entry file (and the VMM's temp dir when it is a cellvm-* dir of ours). */
void creg_remove(struct creg *r, const struct creg_entry *e, bool with_dir);

/* Call locked. Reads every entry: damaged ones are reported on `log` and
 * removed, stale ones removed (reported), VMMs past deadline + grace killed
 * (reported) and removed. The live ones (oldest first) go to out[0..max);
 * returns their number or a negative errno. */
int creg_sweep(struct creg *r, struct creg_entry *out, size_t max, FILE *log);

/* SIGKILLs the entry's VMM through a pidfd if its start time still matches.
 * 1: signalled, 0: not (gone, or another process has the pid). */
int creg_kill_vmm(const struct creg_entry *e);

/* Its on_timeout is "pause". */
bool creg_pauses_at_timeout(const struct creg_entry *e);

/* A new key "<vmm>-<8 hex>" not in use. */
int creg_new_key(struct creg *r, const char *vmm, char *key, size_t keylen);

#endif
