/* cellvm serve's API key: $CELLVM_API_KEY, else the one kept in the user's
 * config directory ($XDG_CONFIG_HOME/cellvm/api_key, else
 * ~/.config/cellvm/api_key), made on first start. Keys look like E2B's
 * ("e2b_" and 40 hex digits): E2B's Python SDK refuses any other shape. */
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int key_path(char *dir, size_t dirlen, char *path, size_t pathlen)
{
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        int n;
        if (xdg && xdg[0] == '/')
                n = snprintf(dir, dirlen, "%s/cellvm", xdg);
        else if (home && home[0] == '/')
                n = snprintf(dir, dirlen, "%s/.config/cellvm", home);
        else
                return -ENOENT;
        if (n < 0 || (size_t)n >= dirlen)
                return -ENAMETOOLONG;
        n = snprintf(path, pathlen, "%s/api_key", dir);
        return n < 0 || (size_t)n >= pathlen ? -ENAMETOOLONG : 0;
}

static int mkdirs(char *dir)
{
        for (char *p = dir + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                int rc = mkdir(dir, 0700) < 0 && errno != EEXIST ? -errno : 0;
                *p = '/';
                if (rc < 0)
                        return rc;
        }
        return mkdir(dir, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

static bool well_formed(const char *k, size_t n)
{
        if (n < 8 || n > 120)
                return false;
        for (size_t i = 0; i < n; i++)
                if (k[i] <= ' ' || k[i] > '~')
                        return false;
        return true;
}

int serve_load_key(char *out, size_t outlen, char *err, size_t errlen)
{
        const char *env = getenv("CELLVM_API_KEY");
        if (env && env[0]) {
                if (!well_formed(env, strlen(env)) || strlen(env) >= outlen) {
                        snprintf(err, errlen,
                                 "$CELLVM_API_KEY: 8 to 120 printable characters, no spaces");
                        return -EINVAL;
                }
                snprintf(out, outlen, "%s", env);
                return 0;
        }
        char dir[PATH_MAX], path[PATH_MAX + 16];
        int rc = key_path(dir, sizeof(dir), path, sizeof(path));
        if (rc < 0) {
                snprintf(err, errlen, "no $CELLVM_API_KEY and no config directory ($HOME unset)");
                return rc;
        }
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                struct stat st;
                char buf[128];
                ssize_t n = fstat(fd, &st) == 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
                close(fd);
                if (n < 0 || st.st_uid != getuid() || (st.st_mode & 077)) {
                        snprintf(err, errlen, "%s: %s", path,
                                 n < 0 ? strerror(errno)
                                       : "must be this user's and readable by it alone (0600)");
                        return -EPERM;
                }
                while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                        n--;
                if (!well_formed(buf, (size_t)n) || (size_t)n >= outlen) {
                        snprintf(err, errlen, "%s: not a key (remove it to have a new one made)",
                                 path);
                        return -EINVAL;
                }
                memcpy(out, buf, (size_t)n);
                out[n] = '\0';
                return 0;
        }
        if (errno != ENOENT) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                return -errno;
        }
        unsigned char raw[20];
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
                snprintf(err, errlen, "getrandom: %s", strerror(errno));
                return -EIO;
        }
        char key[64] = "e2b_";
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(key + 4 + 2 * i, 3, "%02x", raw[i]);
        if ((rc = mkdirs(dir)) < 0) {
                snprintf(err, errlen, "creating %s: %s", dir, strerror(-rc));
                return rc;
        }
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
                snprintf(err, errlen, "creating %s: %s", path, strerror(errno));
                return -errno;
        }
        size_t len = strlen(key);
        key[len] = '\n';
        ssize_t w = write(fd, key, len + 1);
        int saved = errno;
        if (close(fd) < 0 && w == (ssize_t)(len + 1)) {
                saved = errno;
                w = -1;
        }
        key[len] = '\0';
        if (w != (ssize_t)(len + 1)) {
                (void)unlink(path);
                snprintf(err, errlen, "writing %s: %s", path, strerror(saved));
                return -EIO;
        }
        snprintf(out, outlen, "%s", key);
        fprintf(stderr, "cellvm serve: made an API key, kept in %s (0600):\n  %s\n", path, key);
        return 0;
}
