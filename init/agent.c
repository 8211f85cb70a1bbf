#include "agent.h"

#include "cgroup.h"
#include "log.h"
#include "stamps.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AGENT_PATH_ENV "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Appends a copy of s to strbuf and argv; returns 0 or -E2BIG. */
static int push(char **argv, size_t max, size_t *argc, char *strbuf, size_t bufsz, size_t *used,
                const char *s, size_t len)
{
        if (*argc + 1 >= max || *used + len + 1 > bufsz)
                return -E2BIG;
        memcpy(strbuf + *used, s, len);
        strbuf[*used + len] = '\0';
        argv[(*argc)++] = strbuf + *used;
        argv[*argc] = NULL;
        *used += len + 1;
        return 0;
}

/* Copies the word at *p into word with its single quotes removed, so that
 * '' is an empty argument and 'a b' one argument (what a shell would pass);
 * advances *p past it. -EINVAL for an unterminated quote. */
static int next_word(const char **p, char *word, size_t wordsz, size_t *len)
{
        const char *s = *p;
        bool quoted = false;
        size_t n = 0;

        for (; *s != '\0' && (quoted || (*s != ' ' && *s != '\t')); s++) {
                if (*s == '\'') {
                        quoted = !quoted;
                        continue;
                }
                if (n + 1 >= wordsz)
                        return -E2BIG;
                word[n++] = *s;
        }
        if (quoted)
                return -EINVAL;
        word[n] = '\0';
        *len = n;
        *p = s;
        return 0;
}

/* QEMU's second virtio-serial port (client/c/vmm.h, CVM_EGRESS_PORT): the
 * host's egress keeper carries the guest's proxy streams over it. */
#define EGRESS_PORT "/dev/virtio-ports/cellvm.egress"

int agent_argv(const struct init_config *c, char **argv, size_t max, char *strbuf, size_t bufsz)
{
        size_t argc = 0, used = 0;
        char tmp[320];
        int r;

#define PUSH(s) push(argv, max, &argc, strbuf, bufsz, &used, (s), strlen(s))
        if ((r = PUSH(c->agent)) < 0)
                return r;
        if (c->vsock_port != 0) {
                snprintf(tmp, sizeof(tmp), "vsock:%u", c->vsock_port);
                if ((r = PUSH("--listen")) < 0 || (r = PUSH(tmp)) < 0)
                        return r;
        }
        if (c->serial[0] != '\0') {
                snprintf(tmp, sizeof(tmp), "serial:/dev/virtio-ports/%s", c->serial);
                if ((r = PUSH("--listen")) < 0 || (r = PUSH(tmp)) < 0)
                        return r;
                /* The launcher's egress port, where the VMM has one (docs/NETWORK.md). */
                if (access(EGRESS_PORT, F_OK) == 0 &&
                    ((r = PUSH("--listen")) < 0 || (r = PUSH("serial:" EGRESS_PORT)) < 0))
                        return r;
        }
        if (c->workdir[0] != '\0' && ((r = PUSH("--workdir")) < 0 || (r = PUSH(c->workdir)) < 0))
                return r;
#undef PUSH
        /* Extra arguments (the whole value double-quoted on the kernel command
         * line): whitespace-separated words; '...' inside a word is literal. */
        for (const char *p = c->agent_args;;) {
                char word[sizeof(c->agent_args)];
                size_t len;
                p += strspn(p, " \t");
                if (*p == '\0')
                        break;
                if ((r = next_word(&p, word, sizeof(word), &len)) < 0) {
                        log_error("cellvm.agent_args \"%s\": %s", c->agent_args,
                                  r == -EINVAL ? "unterminated ' quote" : strerror(-r));
                        return r;
                }
                if ((r = push(argv, max, &argc, strbuf, bufsz, &used, word, len)) < 0)
                        return r;
        }
        return (int)argc;
}

/* In the forked child, before exec: report on stderr (the console) and end. */
__attribute__((noreturn)) static void child_fail(const char *what)
{
        log_error("agent child: %s: %s", what, strerror(errno));
        _exit(127);
}

static void ensure_dir(const char *path)
{
        if (path[0] == '/' && mkdir(path, 0755) != 0 && errno != EEXIST)
                log_warn("mkdir %s: %s", path, strerror(errno));
}

pid_t agent_start(const struct init_config *c, bool user_cgroup)
{
        char *argv[AGENT_MAX_ARGS];
        char argbuf[2048];
        char *envp[8 + STAMPS_MAX + 1];
        char stampbuf[STAMPS_MAX * 64];
        size_t envc = 0;
        int r;

        if ((r = agent_argv(c, argv, AGENT_MAX_ARGS, argbuf, sizeof(argbuf))) < 0)
                return r;
        ensure_dir(c->workdir);
        if (c->serial[0] != '\0' && access(argv[0], X_OK) == 0) {
                char port[128];
                snprintf(port, sizeof(port), "/dev/virtio-ports/%s", c->serial);
                if (access(port, F_OK) != 0)
                        log_warn("serial port %s missing (no virtio-console device?)", port);
        }
        envp[envc++] = AGENT_PATH_ENV;
        envp[envc++] = "HOME=/root";
        envp[envc++] = "LANG=C.UTF-8";
        envp[envc++] = "CELLVM_INIT=1";
        if (user_cgroup)
                envp[envc++] = "CELLVM_USER_CGROUP=" CGROUP_USER_PATH;
        /* Whether the guest has a NIC: the agent's default for user code's sockets. */
        envp[envc++] = c->net == NET_STATIC ? "CELLVM_NET=static" : "CELLVM_NET=loopback";
        stamp_record("agent_exec");
        r = stamps_to_env(envp + envc, STAMPS_MAX, stampbuf, sizeof(stampbuf));
        if (r < 0)
                return r;
        envc += (size_t)r;
        envp[envc] = NULL;

        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                sigset_t none;
                /* PID 1 blocks every signal; the agent starts with none blocked.
                 * Any failure here ends the child like a failed exec: init logs
                 * the death and restarts with backoff. */
                sigemptyset(&none);
                if (sigprocmask(SIG_SETMASK, &none, NULL) != 0)
                        child_fail("unblock signals");
                /* Its own session and process group: a kill of the agent's group
                 * never reaches init. */
                if (setsid() < 0)
                        child_fail("setsid");
                if (chdir("/") != 0)
                        child_fail("chdir /");
                execve(argv[0], argv, envp);
                log_error("exec %s: %s", argv[0], strerror(errno));
                _exit(127);
        }
        log_info("agent %s started, pid %d", argv[0], (int)pid);
        return pid;
}
