/* `cellvm mcp`: the MCP server on stdio, one JSON-RPC message a line
 * (docs/MCP.md). stdout carries only the protocol: everything else this
 * process or the template code prints goes to stderr. The session's sandbox
 * ends with stdin's end (the client closed or died) or a signal; a SIGKILL
 * leaves it to its deadline. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_sandboxes.h"
#include "mcp.h"

static const char mcp_usage[] =
    "usage: cellvm mcp [--image DIR] [--memory MB] [--vcpus N]\n"
    "\n"
    "A Model Context Protocol server on stdin/stdout (JSON-RPC 2.0, one message a\n"
    "line): the tools run_code, write_file, read_file, list_files and run_command in\n"
    "a sandbox of its own, a micro-VM restored from this image's template on the\n"
    "first call and ended when stdin closes. Client configuration (docs/MCP.md):\n"
    "  {\"command\": \"cellvm\", \"args\": [\"mcp\"]}\n"
    "\n"
    "  --image DIR   the guest image (default $CELLVM_IMAGE, else build/image)\n"
    "  --memory MB   the sandbox's RAM (default 1024), --vcpus N its CPUs (1)\n";

static int out_fd = -1;
static struct mcp_session session;

/* Writes all of `p` to the protocol's fd. */
static int write_all(const char *p, size_t n)
{
        while (n) {
                ssize_t w = write(out_fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

static int send_msg(json_t *msg)
{
        char *text = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        if (!text)
                return -ENOMEM;
        size_t n = strlen(text);
        text[n] = '\n'; /* the NUL's place: one write for the line */
        int rc = write_all(text, n + 1);
        free(text);
        return rc;
}

static void *on_signal(void *arg)
{
        sigset_t *set = arg;
        int sig = 0;
        sigwait(set, &sig);
        fprintf(stderr, "cellvm mcp: %s: ending the sandbox\n", strsignal(sig));
        serve.stopping = 1;
        serve_kill_all();
        _exit(0);
}

/* One line: answered (or not, for a notification). */
static int handle_line(const char *line, size_t len)
{
        json_t *error = NULL;
        json_t *msg = mcp_parse(line, len, &error);
        if (!msg)
                return send_msg(error);
        json_t *reply = mcp_dispatch(&session, msg);
        json_decref(msg);
        return reply ? send_msg(reply) : 0;
}

/* Reads stdin a line at a time, each bounded by MCP_MESSAGE_MAX: a longer
 * one is refused (its id unknown) and skipped to its end. */
static int serve_stdin(void)
{
        size_t cap = 64 << 10, len = 0, scan = 0;
        char *buf = malloc(cap);
        bool skipping = false;
        if (!buf)
                return -ENOMEM;
        for (;;) {
                char *nl = memchr(buf + scan, '\n', len - scan);
                if (nl) {
                        size_t n = (size_t)(nl - buf);
                        if (!skipping && n && !(n == 1 && buf[0] == '\r') &&
                            handle_line(buf, n) < 0)
                                break; /* stdout is gone: so is the client */
                        skipping = false;
                        memmove(buf, nl + 1, len - n - 1);
                        len -= n + 1;
                        scan = 0;
                        continue;
                }
                scan = len;
                if (len >= MCP_MESSAGE_MAX) {
                        if (!skipping &&
                            send_msg(mcp_error(NULL, -32600,
                                               "Invalid Request: a message over %u bytes",
                                               MCP_MESSAGE_MAX)) < 0)
                                break;
                        skipping = true;
                        len = scan = 0;
                }
                if (len == cap) {
                        size_t ncap = cap * 2 > MCP_MESSAGE_MAX ? MCP_MESSAGE_MAX : cap * 2;
                        char *b = realloc(buf, ncap);
                        if (!b)
                                break;
                        buf = b;
                        cap = ncap;
                }
                ssize_t r = read(STDIN_FILENO, buf + len, cap - len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0) {
                        if (r == 0 && len && !skipping) /* a last line without its newline */
                                (void)handle_line(buf, len);
                        break;
                }
                len += (size_t)r;
        }
        free(buf);
        return 0;
}

int cmd_mcp(int argc, char **argv)
{
        static const struct option opts[] = {
            {"image", required_argument, NULL, 'i'},
            {"memory", required_argument, NULL, 'm'},
            {"vcpus", required_argument, NULL, 'n'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        const char *image = getenv("CELLVM_IMAGE");
        serve.image = image && image[0] ? image : "build/image";
        serve.memory_mb = 1024;
        serve.vcpus = 1;
        int opt;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (opt) {
                case 'i':
                        serve.image = optarg;
                        break;
                case 'm':
                case 'n':
                        if (serve_vm_option("mcp", opt, optarg) < 0)
                                return 2;
                        break;
                case 'h':
                        fputs(mcp_usage, stdout);
                        return 0;
                default:
                        fputs(mcp_usage, stderr);
                        return 2;
                }
        }
        if (optind != argc) {
                fprintf(stderr, "cellvm mcp: unexpected argument %s\n%s", argv[optind], mcp_usage);
                return 2;
        }
        /* The protocol gets its own copy of stdout; fd 1 becomes stderr, so
         * nothing else (template builds, warnings) can corrupt the stream. */
        fflush(stdout);
        out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (out_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
                fprintf(stderr, "cellvm mcp: stdout: %s\n", strerror(errno));
                return 1;
        }
        sigset_t set;
        serve_block_signals(&set);
        sbx_sweep();
        pthread_t sig_thread, reaper;
        if (pthread_create(&sig_thread, NULL, on_signal, &set) != 0 ||
            pthread_create(&reaper, NULL, serve_reaper, NULL) != 0) {
                fputs("cellvm mcp: cannot start its threads\n", stderr);
                return 1;
        }
        serve.ready = true;
        mcp_session_init(&session);
        int rc = serve_stdin();
        mcp_session_end(&session);
        serve.stopping = 1;
        serve_kill_all();
        pthread_join(reaper, NULL);
        return rc < 0 ? 1 : 0;
}
