#include "modules.h"

#include "cmdline.h"
#include "log.h"
#include "moddep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#define MODULES_MAX 128
#define DEP_FILE_MAX (8u << 20)
#ifndef MODULE_INIT_COMPRESSED_FILE
#define MODULE_INIT_COMPRESSED_FILE 4
#endif

/* Reads a whole (bounded) file into a malloc'd NUL-terminated buffer. */
static int read_text(const char *path, size_t max, char **out)
{
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        int err = 0;

        if (buf == NULL || fd < 0) {
                err = buf == NULL ? -ENOMEM : -errno;
                goto fail;
        }
        for (;;) {
                if (len + 1 == cap) {
                        if (cap >= max) {
                                err = -EFBIG;
                                goto fail;
                        }
                        char *nbuf = realloc(buf, cap * 2);
                        if (nbuf == NULL) {
                                err = -ENOMEM;
                                goto fail;
                        }
                        buf = nbuf;
                        cap *= 2;
                }
                ssize_t n = read(fd, buf + len, cap - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        err = -errno;
                        goto fail;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        close(fd);
        buf[len] = '\0';
        *out = buf;
        return 0;
fail:
        if (fd >= 0)
                close(fd);
        free(buf);
        return err;
}

int module_params(const char *cmdline, const char *name, char *out, size_t outsz)
{
        struct cmdline_arg arg;
        const char *cur = cmdline;
        size_t len = 0, nlen = strlen(name);
        int r;

        out[0] = '\0';
        if (nlen >= 64)
                return -ENAMETOOLONG; /* longer than any module name (MODULE_NAME_LEN) */
        while ((r = cmdline_next(&cur, &arg)) != 0) {
                char canon[64];
                const char *dot = strchr(arg.key, '.');
                if (r < 0 || dot == NULL || (size_t)(dot - arg.key) != nlen)
                        continue;
                memcpy(canon, arg.key, nlen);
                canon[nlen] = '\0';
                for (char *p = canon; *p; p++)
                        if (*p == '-')
                                *p = '_';
                if (strcmp(canon, name) != 0)
                        continue;
                bool quote = strchr(arg.value, ' ') != NULL;
                int w = snprintf(out + len, outsz - len, "%s%s%s%s%s%s", len ? " " : "", dot + 1,
                                 arg.has_value ? "=" : "", quote ? "\"" : "", arg.value,
                                 quote ? "\"" : "");
                if (w < 0 || (size_t)w >= outsz - len)
                        return -E2BIG;
                len += (size_t)w;
        }
        return 0;
}

static bool is_builtin(const char *builtin_text, const char *name)
{
        if (builtin_text == NULL)
                return false;
        for (const char *p = builtin_text; *p != '\0';) {
                char line[256], canon[64];
                size_t n = strcspn(p, "\n");
                if (n < sizeof(line)) {
                        memcpy(line, p, n);
                        line[n] = '\0';
                        if (module_name_of(line, canon, sizeof(canon)) == 0 &&
                            strcmp(canon, name) == 0)
                                return true;
                }
                p += n;
                if (*p == '\n')
                        p++;
        }
        return false;
}

static int load_one(const char *dir, const char *relpath, const char *cmdline)
{
        char path[512], name[64], params[1024];
        int flags = 0;

        if (snprintf(path, sizeof(path), "%s/%s", dir, relpath) >= (int)sizeof(path))
                return -ENAMETOOLONG;
        int r = module_name_of(relpath, name, sizeof(name));
        if (r < 0)
                return r;
        r = module_params(cmdline, name, params, sizeof(params));
        if (r < 0)
                return r;
        const char *ko = strstr(relpath, ".ko");
        if (ko != NULL && ko[3] != '\0')
                flags |= MODULE_INIT_COMPRESSED_FILE; /* .ko.xz/.zst/.gz: the kernel unpacks */
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = (int)syscall(SYS_finit_module, fd, params, flags);
        r = r == 0 || errno == EEXIST ? 0 : -errno;
        close(fd);
        log_debug("module %s%s%s: %s", name, params[0] ? " " : "", params,
                  r == 0 ? "loaded" : strerror(-r));
        return r;
}

int modules_load_listed(const char *list_path, const char *cmdline)
{
        struct utsname uts;
        struct moddep dep = {0};
        char dir[300], path[400];
        char *list = NULL, *deptext = NULL, *builtin = NULL;
        const char *order[MODULES_MAX];
        size_t n = 0;
        int first_err = 0, r;

        r = read_text(list_path, 64 * 1024, &list);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (uname(&uts) != 0) {
                r = -errno;
                goto out;
        }
        snprintf(dir, sizeof(dir), "/lib/modules/%s", uts.release);
        /* A kernel with its drivers built in (`make kernel`) may boot an image
         * whose modules are for another kernel: nothing to load, not an error. */
        if (access(dir, F_OK) != 0 && errno == ENOENT) {
                log_info("no %s: kernel with built-in drivers? %s skipped", dir, list_path);
                r = 0;
                goto out;
        }
        snprintf(path, sizeof(path), "%s/modules.dep", dir);
        if ((r = read_text(path, DEP_FILE_MAX, &deptext)) < 0) {
                log_error("%s: %s", path, strerror(-r));
                goto out;
        }
        if ((r = moddep_parse(&dep, deptext)) < 0)
                goto out;
        deptext = NULL; /* owned by dep now */
        snprintf(path, sizeof(path), "%s/modules.builtin", dir);
        if (read_text(path, DEP_FILE_MAX, &builtin) < 0)
                builtin = NULL;

        for (char *line = strtok(list, "\n"); line != NULL; line = strtok(NULL, "\n")) {
                char name[64];
                line[strcspn(line, "#")] = '\0';
                line += strspn(line, " \t");
                line[strcspn(line, " \t\r")] = '\0';
                if (*line == '\0' || module_name_of(line, name, sizeof(name)) < 0)
                        continue;
                r = moddep_add(&dep, name, order, MODULES_MAX, &n);
                if (r == -ENOENT && is_builtin(builtin, name)) {
                        log_debug("module %s is built in", name);
                        continue;
                }
                if (r < 0) {
                        log_error("module %s: %s", name,
                                  r == -ENOENT ? "not in modules.dep" : strerror(-r));
                        if (first_err == 0)
                                first_err = r;
                }
        }
        for (size_t i = 0; i < n; i++) {
                r = load_one(dir, order[i], cmdline);
                if (r < 0) {
                        log_error("finit_module %s/%s: %s", dir, order[i], strerror(-r));
                        if (first_err == 0)
                                first_err = r;
                }
        }
        r = first_err < 0 ? first_err : (int)n;
out:
        moddep_free(&dep);
        free(deptext);
        free(builtin);
        free(list);
        return r;
}
