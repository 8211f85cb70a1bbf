/* The hybrid-vsock handshake of client/c/hybrid_vsock.c against a scripted
 * VMM socket (a forked process): the request's exact bytes, OK with the
 * stream's first bytes left unread, refusals, answers other than OK, an
 * over-long reply, retries until the guest listens, the deadline and a VMM
 * that exits. */
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../client/c/hybrid_vsock.h"

static char dir[64], path[128];

/* Serves `n` connections in turn: each reads the request line, then, if it
 * is "CONNECT 1024\n", writes replies[i] (NULL: closes at once); "*" repeats
 * the last reply for every later connection. */
static pid_t serve(const char *const *replies, int n)
{
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert(s >= 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        (void)unlink(path);
        strcpy(sa.sun_path, path);
        assert(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(s, 8) == 0);
        pid_t pid = fork();
        assert(pid >= 0);
        if (pid > 0) {
                close(s);
                return pid;
        }
        for (int i = 0;; i++) {
                int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0)
                        _exit(1);
                char line[32];
                size_t k = 0;
                while (k < sizeof(line) - 1 && read(c, line + k, 1) == 1 && line[k++] != '\n')
                        ;
                line[k] = '\0';
                const char *r = replies[i < n ? i : n - 1];
                if (strcmp(line, "CONNECT 1024\n") == 0 && r && write(c, r, strlen(r)) < 0)
                        _exit(1);
                close(c);
        }
}

static void stop(pid_t pid)
{
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        unlink(path);
}

static void test_ok_leaves_the_stream_unread(void)
{
        const char *r[] = {"OK 1073741824\nFRAME"};
        pid_t srv = serve(r, 1);
        int fd;
        char why[160];
        assert(cvm_hybrid_vsock_try(path, 1024, 2000, &fd, why, sizeof(why)) == 0);
        char buf[16] = {0};
        size_t got = 0;
        ssize_t n;
        while (got < 5 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
                got += (size_t)n;
        assert(strcmp(buf, "FRAME") == 0);
        close(fd);
        stop(srv);
}

static void test_failures_of_one_attempt(void)
{
        char longline[CVM_HYBRID_REPLY_MAX + 40];
        memset(longline, 'x', sizeof(longline) - 1);
        longline[sizeof(longline) - 1] = '\0';
        const char *r[] = {"FAIL no listener\n", NULL, longline};
        pid_t srv = serve(r, 3);
        int fd = -1;
        char why[160];
        assert(cvm_hybrid_vsock_try(path, 1024, 2000, &fd, why, sizeof(why)) == -ECONNREFUSED);
        assert(strstr(why, "FAIL no listener"));
        assert(cvm_hybrid_vsock_try(path, 1024, 2000, &fd, why, sizeof(why)) == -ECONNRESET);
        assert(cvm_hybrid_vsock_try(path, 1024, 2000, &fd, why, sizeof(why)) == -EPROTO);
        assert(fd == -1);
        stop(srv);
        assert(cvm_hybrid_vsock_try(path, 1024, 2000, &fd, why, sizeof(why)) == -ENOENT);
}

static void test_retried_until_the_guest_listens(void)
{
        const char *r[] = {NULL, NULL, NULL, "OK 5\n"};
        pid_t srv = serve(r, 4);
        int fd;
        char why[160];
        assert(cvm_hybrid_vsock_connect(path, 1024, 10000, NULL, NULL, &fd, why, sizeof(why)) == 0);
        close(fd);
        stop(srv);
}

static void test_deadline_keeps_the_vmms_answer(void)
{
        const char *r[] = {"NO guest\n"};
        pid_t srv = serve(r, 1);
        int fd;
        char why[256];
        assert(cvm_hybrid_vsock_connect(path, 1024, 300, NULL, NULL, &fd, why, sizeof(why)) ==
               -ETIMEDOUT);
        assert(strstr(why, "NO guest"));
        stop(srv);
}

static int dead(void *ud)
{
        (void)ud;
        return 0;
}

static void test_a_vmm_that_exited(void)
{
        int fd;
        char why[256];
        assert(cvm_hybrid_vsock_connect(path, 1024, 10000, dead, NULL, &fd, why, sizeof(why)) ==
               -ECHILD);
}

int main(void)
{
        snprintf(dir, sizeof(dir), "/tmp/cellvm-hv-XXXXXX");
        assert(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/vsock.sock", dir);
        test_ok_leaves_the_stream_unread();
        test_failures_of_one_attempt();
        test_retried_until_the_guest_listens();
        test_deadline_keeps_the_vmms_answer();
        test_a_vmm_that_exited();
        rmdir(dir);
        puts("test_client_hybrid_vsock: ok");
        return 0;
}
