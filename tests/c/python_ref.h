/*
 * The C unit tests' reference values from the Python SDK itself: runs
 * `/usr/bin/python3 -c CODE` with client/python and tests/ on its path (the tests run
 * from the checkout's root, as `make check-c` does; $CELLVM_ROOT names
 * another) and returns what it printed. `input` (may be NULL) is written to
 * its stdin, so data reaches the Python code without quoting.
 */
#ifndef CELLVM_TESTS_PYTHON_REF_H
#define CELLVM_TESTS_PYTHON_REF_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* 0 with `out` (NUL-terminated; at most outlen-1 bytes) holding stdout, or -1
 * (printed why) when Python could not run or exited non-zero. */
static inline int python_ref(const char *code, const char *input, size_t inlen, char *out,
                             size_t outlen)
{
        const char *root = getenv("CELLVM_ROOT");
        char pypath[4096];
        const char *r = root && root[0] ? root : ".";
        snprintf(pypath, sizeof(pypath), "%s/client/python:%s/tests", r, r);
        if (setenv("PYTHONPATH", pypath, 1) < 0)
                return -1;
        int in[2], outp[2];
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0)
                return -1;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
        char *argv[] = {"/usr/bin/python3", "-c", (char *)code, NULL};
        pid_t pid;
        int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(in[0]);
        close(outp[1]);
        if (rc != 0) {
                fprintf(stderr, "python_ref: posix_spawn: %s\n", strerror(rc));
                close(in[1]);
                close(outp[0]);
                return -1;
        }
        /* Inputs are small (< 1 MiB): written whole, then the output read. A
         * writer larger than the pipe would need the reader running too. */
        signal(SIGPIPE, SIG_IGN);
        for (size_t off = 0; input && off < inlen;) {
                ssize_t n = write(in[1], input + off, inlen - off);
                if (n <= 0)
                        break;
                off += (size_t)n;
        }
        close(in[1]);
        size_t len = 0;
        for (;;) {
                ssize_t n = read(outp[0], out + len, outlen - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0 || (len += (size_t)n) == outlen - 1)
                        break;
        }
        out[len] = '\0';
        close(outp[0]);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "python_ref: python3 failed (status %d) on:\n%s\n", status, code);
                return -1;
        }
        return 0;
}

#endif
