/* The sandbox user's credentials (creds.c), and the file-system identity switch around file
 * operations. */
#ifndef CELLVM_AGENT_CREDS_H
#define CELLVM_AGENT_CREDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct agent;

struct creds {
        char name[64];
        uid_t uid;
        gid_t gid;
        gid_t groups[64];
        int ngroups;
        char home[4096]; /* base of relative paths and default cwd of commands */
        bool drop;       /* the agent is root and the user is not: switch around operations */
};

/* Resolves `name` (NULL: the default user). Returns 0 or -ENOENT for an unknown explicit user. */
int creds_lookup(struct agent *a, const char *name, struct creds *out);

/* File-system identity switch around file operations (setfsuid/setfsgid/setgroups). */
struct creds_saved {
        bool active;
        uid_t fsuid;
        gid_t fsgid;
        gid_t groups[64];
        int ngroups;
};
int creds_enter(const struct creds *cr, struct creds_saved *saved);
void creds_leave(struct creds_saved *saved);

/* Makes `path` absolute against the user's home into `out`, "~" and "~/..." expanded to
 * that home as envd does, and cleans it lexically. Returns 0, -EINVAL for "~name" (no
 * other user's home: CREDS_TILDE_ERROR) or -ENAMETOOLONG. */
int creds_resolve_path(const struct creds *cr, const char *path, char *out, size_t size);

/* envd's message for a "~name" path (permissions/path.go ExpandAndResolve): the path, the
 * request's user. */
#define CREDS_TILDE_ERROR                                                                          \
        "failed to expand path '%.3800s' for user '%s': cannot expand user-specific home dir"

#endif
