/*
 * Unit tests of the CLI's QMP client (client/c/qmp.c): the reply parser and
 * JSON scanner on what QEMU 7.2 sends (greetings, returns, errors, events)
 * and on malformed, deep and oversized input; then the client against a
 * scripted QMP peer in a child process (a stand-in for QEMU's monitor,
 * which the VM tests drive for real): capabilities, events skipped, an fd
 * passed with `getfd` (SCM_RIGHTS), query-migrate polled to its end, an error
 * reported with QEMU's class and description, a peer that hangs up.
 */
#include "../../client/c/qmp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void parses(const char *line, enum cqmp_kind kind, const char *value)
{
        struct cqmp_reply r;
        int rc = cqmp_parse_reply(line, strlen(line), &r);
        CHECK(rc == 0 && r.kind == kind);
        if (rc == 0 && value)
                CHECK(r.value_len == strlen(value) && memcmp(r.value, value, r.value_len) == 0);
        if (rc != 0 || r.kind != kind)
                fprintf(stderr, "line %s: rc %d kind %d\n", line, rc, (int)r.kind);
}

static void test_replies(void)
{
        parses("{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}, "
               "\"package\": \"Debian 1:7.2+dfsg-7+deb12u18\"}, \"capabilities\": [\"oob\"]}}",
               CQMP_GREETING, NULL);
        parses("{\"return\": {}}", CQMP_RETURN, "{}");
        parses("  {\"return\": [] }\r", CQMP_RETURN, "[]");
        parses("{\"timestamp\": {\"seconds\": 1796160500, \"microseconds\": 12}, \"event\": "
               "\"STOP\"}",
               CQMP_EVENT, "\"STOP\"");
        const char *mig = "{\"return\": {\"expected-downtime\": 300, \"status\": \"completed\", "
                          "\"setup-time\": 0, \"total-time\": 11, \"ram\": {\"total\": "
                          "1073741824, \"mbps\": 0.5, \"dirty-sync-count\": 2, \"x\": -1.5e+3, "
                          "\"ok\": true, \"no\": false, \"none\": null}}}";
        struct cqmp_reply r;
        CHECK(cqmp_parse_reply(mig, strlen(mig), &r) == 0 && r.kind == CQMP_RETURN);
        const char *v;
        size_t vl;
        char s[64];
        CHECK(cqmp_json_get(r.value, r.value_len, "status", &v, &vl) == 0);
        CHECK(cqmp_json_string(v, vl, s, sizeof(s)) == 0 && strcmp(s, "completed") == 0);
        CHECK(cqmp_json_get(r.value, r.value_len, "total-time", &v, &vl) == 0);
        CHECK(vl == 2 && memcmp(v, "11", 2) == 0);
        CHECK(cqmp_json_get(r.value, r.value_len, "error-desc", &v, &vl) == -ENOENT);
        CHECK(cqmp_json_get(r.value, r.value_len, "ram", &v, &vl) == 0 && v[0] == '{');
        /* a member nested deeper is not the object's own */
        CHECK(cqmp_json_get(r.value, r.value_len, "mbps", &v, &vl) == -ENOENT);
        CHECK(cqmp_json_get("{}", 2, "x", &v, &vl) == -ENOENT);
        CHECK(cqmp_json_get("[1]", 3, "x", &v, &vl) == -EPROTO);

        const char *err = "{\"error\": {\"class\": \"GenericError\", \"desc\": \"Unknown "
                          "capability \\\"x\\\" \\u00e9\\u20ac \\ud83d\\ude00 tab\\there\\\\\"}}";
        CHECK(cqmp_parse_reply(err, strlen(err), &r) == 0 && r.kind == CQMP_ERROR);
        CHECK(strcmp(r.error_class, "GenericError") == 0);
        CHECK(strcmp(r.desc, "Unknown capability \"x\" é€ 😀 tab\there\\") == 0);
        /* an error without a class is still one */
        const char *bare = "{\"error\": {\"desc\": \"no\"}}";
        CHECK(cqmp_parse_reply(bare, strlen(bare), &r) == 0 && r.kind == CQMP_ERROR);
        CHECK(strcmp(r.error_class, "Error") == 0 && strcmp(r.desc, "no") == 0);
}

static void test_malformed(void)
{
        static const char *const bad[] = {
            "",
            "{",
            "{\"return\": }",
            "{\"return\": {}} trailing",
            "{\"return\": {}}{\"return\": {}}",
            "[{\"return\": {}}]",
            "{\"foo\": 1}", /* none of QMP's members */
            "{\"return\": \"unterminated}",
            "{\"return\": \"raw \x01 control\"}",
            "{\"return\": \"bad \\x escape\"}",
            "{\"return\": \"short \\u12\"}",
            "{\"return\": tru}",
            "{\"return\": -}",
            "{\"return\": 1.}",
            "{\"return\": 1e}",
            "{\"return\" {}}",
            "{\"return\": {}, }",
            "{return: {}}",
            NULL,
        };
        struct cqmp_reply r;
        for (const char *const *b = bad; *b; b++) {
                int rc = cqmp_parse_reply(*b, strlen(*b), &r);
                CHECK(rc == -EPROTO);
                if (rc != -EPROTO)
                        fprintf(stderr, "accepted: %s\n", *b);
        }
        /* Nesting is bounded: 31 levels inside the reply are fine, 40 are not. */
        char deep[256];
        for (int levels = 31; levels <= 40; levels += 9) {
                size_t k = (size_t)snprintf(deep, sizeof(deep), "{\"return\": ");
                for (int i = 0; i < levels; i++)
                        deep[k++] = '[';
                for (int i = 0; i < levels; i++)
                        deep[k++] = ']';
                deep[k++] = '}';
                deep[k] = '\0';
                CHECK(cqmp_parse_reply(deep, k, &r) == (levels == 31 ? 0 : -EPROTO));
        }
        /* A string cut short to fit says so. */
        char small[8];
        CHECK(cqmp_json_string("\"abcdefghij\"", 12, small, sizeof(small)) == -E2BIG);
        CHECK(strcmp(small, "abcdefg") == 0);
        CHECK(cqmp_json_string("\"\\u00e9\\u00e9\\u00e9\\u00e9\"", 26, small, sizeof(small)) ==
              -E2BIG);
        CHECK(strcmp(small, "ééé") == 0);
        CHECK(cqmp_json_string("\"lone \\ud800\"", 13, small, sizeof(small)) == -E2BIG);
        char ok[16];
        CHECK(cqmp_json_string("\"lone \\ud800\"", 13, ok, sizeof(ok)) == 0);
        CHECK(strcmp(ok, "lone \xef\xbf\xbd") == 0);
        CHECK(cqmp_json_string("12", 2, ok, sizeof(ok)) == -EPROTO);
}

/* --- against a scripted peer ------------------------------------------------ */

static int read_line(int fd, char *buf, size_t cap, int *passed_fd)
{
        size_t k = 0;
        while (k + 1 < cap) {
                char cmsg[CMSG_SPACE(sizeof(int))];
                struct iovec iov = {.iov_base = buf + k, .iov_len = 1};
                struct msghdr mh = {.msg_iov = &iov,
                                    .msg_iovlen = 1,
                                    .msg_control = cmsg,
                                    .msg_controllen = sizeof(cmsg)};
                ssize_t n = recvmsg(fd, &mh, 0);
                if (n <= 0)
                        return -1;
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                if (cm && cm->cmsg_type == SCM_RIGHTS && passed_fd)
                        memcpy(passed_fd, CMSG_DATA(cm), sizeof(int));
                if (buf[k++] == '\n')
                        break;
        }
        buf[k] = '\0';
        return 0;
}

static void say(int fd, const char *s)
{
        size_t n = strlen(s);
        if (write(fd, s, n) != (ssize_t)n)
                _exit(3);
}

/* The peer: exits 0 when every command came as expected. */
static void peer(int lfd)
{
        char line[1024];
        int fd = accept(lfd, NULL, NULL), passed = -1;
        if (fd < 0)
                _exit(2);
        say(fd, "{\"QMP\": {\"version\": {}, \"capabilities\": []}}\r\n");
        if (read_line(fd, line, sizeof(line), NULL) < 0 ||
            strcmp(line, "{\"execute\": \"qmp_capabilities\"}\n") != 0)
                _exit(4);
        say(fd, "{\"return\": {}}\r\n");
        if (read_line(fd, line, sizeof(line), &passed) < 0 ||
            strcmp(line, "{\"execute\": \"getfd\", \"arguments\": {\"fdname\": \"st\"}}\n") != 0)
                _exit(5);
        /* the fd came with it: write through it to prove it is the file */
        if (passed < 0 || write(passed, "QEVM", 4) != 4)
                _exit(6);
        close(passed);
        say(fd, "{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, \"event\": \"STOP\"}\r\n"
                "{\"return\": {}}\r\n");
        for (int i = 0; i < 3; i++) {
                if (read_line(fd, line, sizeof(line), NULL) < 0 ||
                    strcmp(line, "{\"execute\": \"query-migrate\"}\n") != 0)
                        _exit(7);
                say(fd, i < 2 ? "{\"return\": {\"status\": \"active\"}}\r\n"
                              : "{\"return\": {\"status\": \"completed\"}}\r\n");
        }
        if (read_line(fd, line, sizeof(line), NULL) < 0)
                _exit(8);
        say(fd, "{\"error\": {\"class\": \"DeviceNotActive\", \"desc\": \"No \\\"x\\\"\"}}\r\n");
        if (read_line(fd, line, sizeof(line), NULL) < 0)
                _exit(9);
        say(fd, "{\"return\": {\"status\": \"failed\", \"error-desc\": \"Unable to write\"}}\n");
        if (read_line(fd, line, sizeof(line), NULL) < 0)
                _exit(10);
        close(fd); /* hangs up instead of answering */
        _exit(0);
}

static void test_against_peer(void)
{
        char dir[] = "/tmp/cellvm-test-qmp-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        char path[128], file[128];
        snprintf(path, sizeof(path), "%s/qmp.sock", dir);
        snprintf(file, sizeof(file), "%s/state", dir);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        strcpy(sa.sun_path, path);
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
              listen(lfd, 1) == 0);
        pid_t pid = fork();
        if (pid == 0)
                peer(lfd);
        close(lfd);
        static struct cqmp q;
        CHECK(cqmp_connect(&q, path, 5000, NULL, NULL) == 0);
        int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        CHECK(cqmp_execute(&q, "getfd", "{\"fdname\": \"st\"}", fd, 5000, NULL) == 0);
        close(fd);
        struct stat st;
        CHECK(stat(file, &st) == 0 && st.st_size == 4);
        CHECK(cqmp_wait_migration(&q, 5000) == 0);
        CHECK(cqmp_execute(&q, "stop", NULL, -1, 5000, NULL) == -EREMOTEIO);
        CHECK(strcmp(q.err, "QMP stop: DeviceNotActive: No \"x\"") == 0);
        CHECK(cqmp_wait_migration(&q, 5000) == -EIO);
        CHECK(strcmp(q.err, "migration failed: Unable to write") == 0);
        CHECK(cqmp_execute(&q, "cont", NULL, -1, 5000, NULL) == -ECONNRESET);
        CHECK(strstr(q.err, "QMP cont: QEMU closed the connection") != NULL);
        cqmp_close(&q);
        int status;
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        /* Nobody listening: refused until the deadline. */
        CHECK(cqmp_connect(&q, path, 50, NULL, NULL) == -ETIMEDOUT);
        CHECK(q.fd == -1);
        CHECK(unlink(path) == 0 && unlink(file) == 0 && rmdir(dir) == 0);
}

/* A peer that never ends its line: bounded, not buffered forever. */
static void test_overlong_line(void)
{
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        pid_t pid = fork();
        if (pid == 0) {
                close(sv[0]);
                char junk[4096];
                memset(junk, 'x', sizeof(junk));
                /* The command first: a peer gone before it is sent would make
                 * the send fail (EPIPE) instead of the read. */
                if (read_line(sv[1], junk, sizeof(junk), NULL) < 0)
                        _exit(1);
                memset(junk, 'x', sizeof(junk));
                say(sv[1], "{\"return\": \"");
                for (int i = 0; i < 20; i++)
                        if (write(sv[1], junk, sizeof(junk)) < 0)
                                _exit(0);
                _exit(0);
        }
        close(sv[1]);
        static struct cqmp q;
        q.fd = sv[0];
        q.len = 0;
        CHECK(cqmp_execute(&q, "query-status", NULL, -1, 5000, NULL) == -EPROTO);
        CHECK(strstr(q.err, "a reply line over 65536 bytes") != NULL);
        cqmp_close(&q);
        CHECK(waitpid(pid, NULL, 0) == pid);
}

int main(void)
{
        test_replies();
        test_malformed();
        test_against_peer();
        test_overlong_line();
        return check_report("test_client_qmp");
}
