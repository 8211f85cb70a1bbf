/* Exec of Node.js with cellvm's JavaScript driver (see node_exec.h). */
#include "node_exec.h"

#include "executor_epoch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Debian's Node.js. */
#define NODE_DEFAULT "/usr/bin/node"
/* Where the image installs the driver (image-build/build_image.py). */
#define DRIVER_INSTALLED "/usr/lib/cellvm/node-executor/driver.js"
/* Relative to the executor binary: build/cellvm-executor (build/san/ too) in a checkout. */
static const char *const driver_near_exe[] = {
    "../node-executor/driver.js", "../../node-executor/driver.js", "node-executor/driver.js"};

/* The driver beside this binary (a checkout), else the installed one. */
static int find_driver(char *out, size_t size)
{
        const char *env = getenv(NODE_EXEC_DRIVER_ENV);
        if (env && *env) {
                if (strlen(env) >= size)
                        return -ENAMETOOLONG;
                strcpy(out, env);
                return 0;
        }
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n > 0) {
                exe[n] = '\0';
                char *slash = strrchr(exe, '/');
                if (slash)
                        slash[1] = '\0';
                for (size_t i = 0; i < sizeof(driver_near_exe) / sizeof(driver_near_exe[0]); i++) {
                        int len = snprintf(out, size, "%s%s", exe, driver_near_exe[i]);
                        if (len > 0 && (size_t)len < size && access(out, R_OK) == 0)
                                return 0;
                }
        }
        if (strlen(DRIVER_INSTALLED) >= size)
                return -ENAMETOOLONG;
        strcpy(out, DRIVER_INSTALLED);
        return access(out, R_OK) == 0 ? 0 : -errno;
}

static const char *node_path(void)
{
        const char *node = getenv(NODE_EXEC_NODE_ENV);
        return node && *node ? node : NODE_DEFAULT;
}

int node_exec_available(char *why, size_t size)
{
        char driver[PATH_MAX];
        const char *node = node_path();
        if (access(node, X_OK) < 0) {
                int err = errno;
                snprintf(why, size,
                         "no Node.js at %s (%s): JavaScript and TypeScript contexts need "
                         "Debian's nodejs, which the default image has",
                         node, strerror(err));
                return -err;
        }
        int rc = find_driver(driver, sizeof(driver));
        if (rc < 0) {
                snprintf(why, size, "cellvm's JavaScript driver is missing (%s: %s)", driver,
                         strerror(-rc));
                return rc;
        }
        return 0;
}

int node_exec(const char *language, bool spare, int ctl_fd, const char **what)
{
        char driver[PATH_MAX];
        *what = "find node-executor/driver.js";
        int rc = find_driver(driver, sizeof(driver));
        if (rc < 0)
                return rc;
        const char *node = node_path();
        /* The control socket stays open across the exec; nothing else does. */
        *what = "keep the control socket";
        int fl = fcntl(ctl_fd, F_GETFD);
        if (fl < 0 || fcntl(ctl_fd, F_SETFD, fl & ~FD_CLOEXEC) < 0)
                return -errno;
        /* Python ignored SIGINT between cells and SIGPIPE always: Node installs its own. */
        *what = "reset signals";
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        sigset_t none;
        sigemptyset(&none);
        if (sigaction(SIGINT, &dfl, NULL) < 0 || sigaction(SIGPIPE, &dfl, NULL) < 0 ||
            sigprocmask(SIG_SETMASK, &none, NULL) < 0)
                return -errno;
        char lang[64];
        snprintf(lang, sizeof(lang), "%s", language);
        /* The epoch it starts in (docs/PROTOCOL.md section 8): the driver reseeds when
         * an X_EXECUTE brings another. */
        char epoch_text[24] = "";
        uint64_t epoch;
        if (executor_epoch_get(&epoch))
                snprintf(epoch_text, sizeof(epoch_text), "%llu", (unsigned long long)epoch);
        char *argv[8] = {(char *)node, driver, "--language", lang};
        int argc = 4;
        if (epoch_text[0]) {
                argv[argc++] = "--epoch";
                argv[argc++] = epoch_text;
        }
        if (spare)
                argv[argc++] = "--spare";
        argv[argc] = NULL;
        *what = node;
        execv(node, argv);
        return -errno;
}
