/*
 * The user's directories of cellvm's stores (docs/SNAPSHOTS.md): an override
 * variable, else an XDG base directory (absolute only), else a path below
 * the home directory.
 */
#ifndef CELLVM_CLIENT_USER_DIRS_H
#define CELLVM_CLIENT_USER_DIRS_H

#include <stddef.h>

/* `$override_env` if set, else `$xdg_env/sub`, else `~/home_rel/sub` (home:
 * $HOME, else the password database). 0, -ENOENT (no home) or -ENAMETOOLONG. */
int cvm_user_dir(const char *override_env, const char *xdg_env, const char *home_rel,
                 const char *sub, char *out, size_t outlen);

#endif
