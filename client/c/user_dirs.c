/* The stores' directories of this user (see user_dirs.h). */
#include "user_dirs.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int cvm_user_dir(const char *override_env, const char *xdg_env, const char *home_rel,
                 const char *sub, char *out, size_t outlen)
{
        const char *env = getenv(override_env);
        const char *xdg = getenv(xdg_env);
        int n;
        if (env && env[0]) {
                n = snprintf(out, outlen, "%s", env);
        } else if (xdg && xdg[0] == '/') {
                n = snprintf(out, outlen, "%s/%s", xdg, sub);
        } else {
                const char *home = getenv("HOME");
                if (!home || !home[0]) {
                        struct passwd *pw = getpwuid(getuid());
                        home = pw ? pw->pw_dir : NULL;
                }
                if (!home)
                        return -ENOENT;
                n = snprintf(out, outlen, "%s/%s/%s", home, home_rel, sub);
        }
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}
