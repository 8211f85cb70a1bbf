/* `cellvm mcp`: the MCP server on stdio, one JSON-RPC message a line
 * (docs/MCP.md). stdout carries only the protocol: everything else this
 * process or the template code prints goes to stderr. A reader thread takes
 * stdin's lines (so a cancellation reaches a running call); the main thread
 * runs the requests one at a time. The session's sandbox ends after stdin's
 * end (what was sent before is answered), at once when the client is gone
 * (its end of stdout closed), or with a signal; a SIGKILL leaves it to its
 * deadline. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
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

#define INBOX_MAX 64 /* requests read ahead of the one running */

static int out_fd = -1;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mcp_session session;

/* Requests the reader thread took from stdin, for the main thread to run one
 * at a time; notifications (a cancellation) are handled by the reader at
 * once, so they reach a call that is running. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        json_t *q[INBOX_MAX];
        size_t head, n;
        bool eof;  /* stdin ended: run what is queued, then exit */
        bool dead; /* the client is gone (its end of stdout closed): exit now */
} inbox = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* One message a line; from either thread. */
static int send_msg(json_t *msg)
{
        char *text = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        if (!text)
                return -ENOMEM;
        size_t n = strlen(text);
        text[n] = '\n'; /* the NUL's place: one write for the line */
        pthread_mutex_lock(&out_lock);
        int rc = cv_write_all(out_fd, text, n + 1);
        pthread_mutex_unlock(&out_lock);
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

static void client_gone(void)
{
        pthread_mutex_lock(&inbox.lock);
        inbox.dead = true;
        pthread_cond_broadcast(&inbox.cond);
        pthread_mutex_unlock(&inbox.lock);
        mcp_session_abort(&session); /* a call running ends with its sandbox */
}

/* notifications/cancelled naming a request still queued: it is dropped,
 * never run nor answered (one running is mcp_session_cancel's). */
static void drop_cancelled(json_t *msg)
{
        const char *method = json_string_value(json_object_get(msg, "method"));
        json_t *id = json_object_get(json_object_get(msg, "params"), "requestId");
        if (!method || strcmp(method, "notifications/cancelled") != 0 || !id)
                return;
        pthread_mutex_lock(&inbox.lock);
        for (size_t i = 0; i < inbox.n; i++) {
                json_t **slot = &inbox.q[(inbox.head + i) % INBOX_MAX];
                if (!json_equal(json_object_get(*slot, "id"), id))
                        continue;
                json_decref(*slot);
                for (size_t j = i; j + 1 < inbox.n; j++)
                        inbox.q[(inbox.head + j) % INBOX_MAX] =
                            inbox.q[(inbox.head + j + 1) % INBOX_MAX];
                inbox.n--;
                pthread_cond_broadcast(&inbox.cond);
                break;
        }
        pthread_mutex_unlock(&inbox.lock);
}

/* One line: an error answered, a notification handled, ping and tools/list answered, a request
 * or a batch queued (waiting while the queue is full). */
static int handle_line(const char *line, size_t len)
{
        json_t *error = NULL;
        json_t *msg = mcp_parse(line, len, &error);
        if (!msg)
                return send_msg(error);
        const char *method = mcp_request_method(msg);
        if (!method && !json_is_array(msg)) {
                drop_cancelled(msg);
                json_decref(mcp_dispatch(&session, msg)); /* NULL: nothing to answer */
                json_decref(msg);
                return 0;
        }
        /* They need no sandbox: answered at once, even while a call runs (the
         * specification's ping: "promptly"). */
        if (method && (strcmp(method, "ping") == 0 || strcmp(method, "tools/list") == 0)) {
                json_t *reply = mcp_dispatch(&session, msg);
                json_decref(msg);
                return send_msg(reply);
        }
        pthread_mutex_lock(&inbox.lock);
        while (inbox.n == INBOX_MAX && !inbox.dead)
                pthread_cond_wait(&inbox.cond, &inbox.lock);
        inbox.q[(inbox.head + inbox.n++) % INBOX_MAX] = msg;
        pthread_cond_broadcast(&inbox.cond);
        pthread_mutex_unlock(&inbox.lock);
        return 0;
}

/* Reads stdin a line at a time, each bounded by MCP_MESSAGE_MAX: a longer
 * one is refused (its id unknown) and skipped to its end. 0 at stdin's end,
 * a negative errno when stdout is gone. */
static int read_lines(void)
{
        size_t cap = 64 << 10, len = 0, scan = 0;
        char *buf = malloc(cap);
        bool skipping = false;
        int rc = 0;
        if (!buf)
                return -ENOMEM;
        for (;;) {
                char *nl = memchr(buf + scan, '\n', len - scan);
                if (nl) {
                        size_t n = (size_t)(nl - buf);
                        if (!skipping && n && !(n == 1 && buf[0] == '\r') &&
                            (rc = handle_line(buf, n)) < 0)
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
                            (rc = send_msg(mcp_error(NULL, -32600,
                                                     "Invalid Request: a message over %u bytes",
                                                     MCP_MESSAGE_MAX))) < 0)
                                break;
                        skipping = true;
                        len = scan = 0;
                }
                if (len == cap) {
                        size_t ncap = cap * 2 > MCP_MESSAGE_MAX ? MCP_MESSAGE_MAX : cap * 2;
                        char *b = realloc(buf, ncap);
                        if (!b) {
                                rc = -ENOMEM;
                                break;
                        }
                        buf = b;
                        cap = ncap;
                }
                ssize_t r = read(STDIN_FILENO, buf + len, cap - len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0) {
                        if (r == 0 && len && !skipping) /* a last line without its newline */
                                rc = handle_line(buf, len);
                        break;
                }
                len += (size_t)r;
        }
        free(buf);
        return rc;
}

/* The reader: stdin's lines, then (at its end) a watch on stdout, whose
 * reader closing means the client is gone rather than just done sending. */
static void *reader(void *arg)
{
        (void)arg;
        if (read_lines() < 0) {
                client_gone();
                return NULL;
        }
        pthread_mutex_lock(&inbox.lock);
        inbox.eof = true;
        pthread_cond_broadcast(&inbox.cond);
        pthread_mutex_unlock(&inbox.lock);
        struct pollfd p = {.fd = out_fd, .events = 0};
        for (;;) {
                int n = poll(&p, 1, -1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) {
                        client_gone();
                        return NULL;
                }
        }
}

/* Runs the queued requests one at a time until stdin's end (the queue
 * drained) or the client's. */
static void run_requests(void)
{
        for (;;) {
                pthread_mutex_lock(&inbox.lock);
                while (!inbox.n && !inbox.eof && !inbox.dead)
                        pthread_cond_wait(&inbox.cond, &inbox.lock);
                json_t *msg = NULL;
                if (inbox.n && !inbox.dead) {
                        msg = inbox.q[inbox.head];
                        inbox.head = (inbox.head + 1) % INBOX_MAX;
                        inbox.n--;
                        pthread_cond_broadcast(&inbox.cond);
                }
                pthread_mutex_unlock(&inbox.lock);
                if (!msg)
                        return;
                json_t *reply = mcp_dispatch(&session, msg);
                json_decref(msg);
                if (reply && send_msg(reply) < 0) {
                        client_gone();
                        return;
                }
        }
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
        pthread_t read_thread;
        if (pthread_create(&read_thread, NULL, reader, NULL) != 0) {
                fputs("cellvm mcp: cannot start its threads\n", stderr);
                return 1;
        }
        pthread_detach(read_thread); /* it may wait on stdout to the end */
        run_requests();
        mcp_session_end(&session);
        serve.stopping = 1;
        serve_kill_all();
        pthread_join(reaper, NULL);
        return 0;
}
