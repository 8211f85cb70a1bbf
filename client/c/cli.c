/* `cellvm`: the command-line client of libcellvm. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "cbor_util.h"
#include "cellvm.h"
#include "msgtypes.h"
#include "print_json.h"

enum {
        EXIT_EXEC_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_CONNECTION = 3,
        EXIT_TIMEOUT = 124,
};

#define MAX_ENVS 64
#define MAX_CODE (64u * 1024u * 1024u)

static const char usage[] =
    "usage: cellvm [--connect ADDR] COMMAND [ARGS]\n"
    "\n"
    "Talks to a cellvm-agent. ADDR is unix:PATH or tcp:HOST:PORT (default: $CELLVM_ADDR).\n"
    "\n"
    "commands:\n"
    "  exec [options] CODE|-     run Python code ('-' reads it from stdin) and print its\n"
    "                            output; images are written as PNG/JPEG files\n"
    "      -c, --context ID      run in this context (default: the default context)\n"
    "      -e, --env KEY=VALUE   environment variable for this execution (repeatable)\n"
    "      -t, --timeout SEC     interrupt the cell after SEC seconds (exit 124)\n"
    "      -o, --out-dir DIR     where images go (default: .), named cellvm-N-K.png\n"
    "  info                      print the agent's handshake (versions, capabilities, boot times)\n"
    "  ping                      measure one round trip\n"
    "  contexts                  list contexts\n"
    "  context-create [--cwd DIR] create a context and print its id\n"
    "  context-restart ID        give a context a fresh namespace\n"
    "  context-remove ID         remove a context\n"
    "  interrupt [ID]            interrupt the running cell of a context\n"
    "\n"
    "exit status: 0 success, 1 the code raised an error, 2 usage, 3 connection or\n"
    "protocol failure, 124 timeout. Ctrl-C during exec interrupts the cell.\n";

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
        (void)sig;
        if (interrupted) /* second Ctrl-C: give up waiting */
                _exit(130);
        interrupted = 1;
}

struct exec_out {
        const char *out_dir;
        uint64_t count;
        unsigned images;
        int io_error;
};

static const struct cvc_mime *find_mime(const struct cvc_event *ev, const char *mime)
{
        for (size_t i = 0; i < ev->u.display.nmime; i++)
                if (strcmp(ev->u.display.mime[i].mime, mime) == 0)
                        return &ev->u.display.mime[i];
        return NULL;
}

static int save_image(struct exec_out *o, const struct cvc_mime *m, const char *ext)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/cellvm-%llu-%u.%s", o->out_dir,
                 (unsigned long long)o->count, ++o->images, ext);
        FILE *f = fopen(path, "wbe");
        if (!f || fwrite(m->data, 1, m->len, f) != m->len || fclose(f) != 0) {
                fprintf(stderr, "cellvm: writing %s: %s\n", path, strerror(errno));
                o->io_error = 1;
                return -errno;
        }
        fprintf(stderr, "[%s: %zu bytes written to %s]\n", m->mime, m->len, path);
        return 0;
}

static void print_bundle(struct exec_out *o, const struct cvc_event *ev)
{
        const struct cvc_mime *png = find_mime(ev, "image/png");
        const struct cvc_mime *jpeg = find_mime(ev, "image/jpeg");
        const struct cvc_mime *text = find_mime(ev, "text/plain");
        if (png && png->kind == CVC_MIME_BYTES)
                save_image(o, png, "png");
        if (jpeg && jpeg->kind == CVC_MIME_BYTES)
                save_image(o, jpeg, "jpg");
        if (text && text->kind == CVC_MIME_TEXT) {
                fwrite(text->data, 1, text->len, stdout);
                fputc('\n', stdout);
        }
        fflush(stdout);
}

static int on_event(const struct cvc_event *ev, void *ud)
{
        struct exec_out *o = ud;
        switch (ev->type) {
        case CV_MSG_EXEC_INPUT:
                o->count = ev->u.input.execution_count;
                break;
        case CV_MSG_STREAM: {
                FILE *f = ev->u.stream.is_stderr ? stderr : stdout;
                fwrite(ev->u.stream.text, 1, ev->u.stream.len, f);
                fflush(f);
                break;
        }
        case CV_MSG_DISPLAY:
        case CV_MSG_RESULT:
                print_bundle(o, ev);
                break;
        case CV_MSG_EXEC_ERROR:
                fflush(stdout);
                if (ev->u.error.ntb == 0)
                        fprintf(stderr, "%.*s: %.*s\n", (int)ev->u.error.name_len, ev->u.error.name,
                                (int)ev->u.error.value_len, ev->u.error.value);
                for (size_t i = 0; i < ev->u.error.ntb; i++)
                        fprintf(stderr, "%.*s\n", (int)ev->u.error.tb_len[i], ev->u.error.tb[i]);
                break;
        default:
                break;
        }
        return 0;
}

static char *read_all(FILE *f)
{
        size_t cap = 1 << 16, len = 0;
        char *buf = malloc(cap);
        while (buf) {
                size_t n = fread(buf + len, 1, cap - len - 1, f);
                len += n;
                if (n == 0)
                        break;
                if (cap - len - 1 == 0) {
                        if (cap >= MAX_CODE) {
                                fprintf(stderr, "cellvm: code on stdin is over %u bytes\n",
                                        MAX_CODE);
                                free(buf);
                                return NULL;
                        }
                        char *nb = realloc(buf, cap * 2);
                        if (!nb)
                                free(buf);
                        buf = nb;
                        cap *= 2;
                }
        }
        if (buf)
                buf[len] = '\0';
        return buf;
}

static int cmd_exec(struct cvc *c, int argc, char **argv)
{
        static const struct option opts[] = {
            {"context", required_argument, NULL, 'c'}, {"env", required_argument, NULL, 'e'},
            {"timeout", required_argument, NULL, 't'}, {"out-dir", required_argument, NULL, 'o'},
            {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
        };
        const char *envs[MAX_ENVS + 1] = {NULL};
        size_t nenv = 0;
        struct cvc_exec_opts eo = {.interrupt = &interrupted};
        struct exec_out out = {.out_dir = "."};
        int opt;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "+c:e:t:o:h", opts, NULL)) != -1) {
                switch (opt) {
                case 'c':
                        eo.context = optarg;
                        break;
                case 'e':
                        if (nenv == MAX_ENVS || !strchr(optarg, '=')) {
                                fprintf(stderr, "cellvm: --env takes KEY=VALUE (at most %d)\n",
                                        MAX_ENVS);
                                return EXIT_USAGE;
                        }
                        envs[nenv++] = optarg;
                        break;
                case 't': {
                        char *end;
                        double s = strtod(optarg, &end);
                        if (*end || s <= 0 || s > 1e7) {
                                fprintf(stderr, "cellvm: bad --timeout %s\n", optarg);
                                return EXIT_USAGE;
                        }
                        eo.timeout_ms = (uint64_t)(s * 1000);
                        break;
                }
                case 'o':
                        out.out_dir = optarg;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return 0;
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind != argc - 1) {
                fputs("cellvm: exec takes exactly one CODE argument ('-' for stdin)\n", stderr);
                return EXIT_USAGE;
        }
        char *code = NULL;
        if (strcmp(argv[optind], "-") == 0) {
                code = read_all(stdin);
                if (!code)
                        return EXIT_USAGE;
        }
        eo.code = code ? code : argv[optind];
        eo.envs = nenv ? envs : NULL;

        struct sigaction sa = {.sa_handler = on_sigint};
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGINT, &sa, NULL) < 0)
                perror("cellvm: sigaction");

        struct cvc_exec_status st;
        int rc = cvc_execute(c, &eo, on_event, &out, &st);
        free(code);
        if (rc < 0) {
                fprintf(stderr, "cellvm: exec: %s\n", cvc_errmsg(c));
                return EXIT_CONNECTION;
        }
        if (st.timed_out) {
                fprintf(stderr, "cellvm: execution timed out\n");
                return EXIT_TIMEOUT;
        }
        return st.error || out.io_error ? EXIT_EXEC_ERROR : 0;
}

/* A request whose body is {} or {key: value}; prints the OK body as JSON if asked. */
static int simple_call(struct cvc *c, uint16_t type, const char *key, const char *value,
                       const char *print_key)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, key && value ? 1 : 0);
        if (key && value) {
                cv_enc_cstr(&b, key);
                cv_enc_cstr(&b, value);
        }
        cbor_item_t *reply = NULL;
        int rc = cvc_call_buf(c, type, &b, &reply);
        cv_buf_free(&b);
        if (rc < 0) {
                fprintf(stderr, "cellvm: %s: %s\n", cv_msg_type_name(type), cvc_errmsg(c));
                return rc == -EREMOTEIO ? EXIT_EXEC_ERROR : EXIT_CONNECTION;
        }
        if (print_key) {
                const cbor_item_t *v = *print_key ? cv_map_get(reply, print_key) : reply;
                const char *s;
                size_t len;
                if (v && cv_item_str(v, &s, &len) == 0)
                        printf("%.*s\n", (int)len, s);
                else if (v)
                        cvc_print_json(stdout, v), fputc('\n', stdout);
        }
        cbor_decref(&reply);
        return 0;
}

static int cmd_context_create(struct cvc *c, int argc, char **argv)
{
        const char *cwd = NULL;
        if (argc == 3 && strcmp(argv[1], "--cwd") == 0)
                cwd = argv[2];
        else if (argc != 1) {
                fputs("cellvm: usage: context-create [--cwd DIR]\n", stderr);
                return EXIT_USAGE;
        }
        return simple_call(c, CV_MSG_CONTEXT_CREATE, "cwd", cwd, "id");
}

static int need_id(int argc, char **argv, const char *what)
{
        if (argc != 2) {
                fprintf(stderr, "cellvm: usage: %s ID\n", what);
                return 0;
        }
        (void)argv;
        return 1;
}

/* put / get / ls: a request that either works or fails with a message. */
static int file_result(struct cvc *c, const char *what, int rc)
{
        if (rc == 0)
                return 0;
        fprintf(stderr, "cellvm: %s: %s\n", what, cvc_errmsg(c));
        return rc == -EREMOTEIO || rc == -ENOENT || rc == -EACCES ? EXIT_EXEC_ERROR
                                                                  : EXIT_CONNECTION;
}

static int cmd_sh(struct cvc *c, int argc, char **argv)
{
        uint64_t timeout_ms = 0;
        int i = 1;
        if (argc == 4 && strcmp(argv[1], "--timeout") == 0) {
                char *end;
                double s = strtod(argv[2], &end);
                if (*end || s <= 0 || s > 1e7) {
                        fprintf(stderr, "cellvm: bad --timeout %s\n", argv[2]);
                        return EXIT_USAGE;
                }
                timeout_ms = (uint64_t)(s * 1000);
                i = 3;
        }
        if (argc != i + 1) {
                fputs("cellvm: usage: sh [--timeout SEC] 'command'\n", stderr);
                return EXIT_USAGE;
        }
        int code;
        int rc = cvc_sh(c, argv[i], timeout_ms, &code);
        if (rc < 0) {
                fprintf(stderr, "cellvm: sh: %s\n", cvc_errmsg(c));
                if (strncmp(cvc_errmsg(c), "timeout", 7) == 0)
                        return EXIT_TIMEOUT;
                return rc == -EREMOTEIO ? EXIT_EXEC_ERROR : EXIT_CONNECTION;
        }
        return code;
}

static int run_command(struct cvc *c, int argc, char **argv)
{
        const char *cmd = argv[0];
        if (strcmp(cmd, "exec") == 0)
                return cmd_exec(c, argc, argv);
        if (strcmp(cmd, "info") == 0) {
                cvc_print_json(stdout, cvc_hello(c));
                fputc('\n', stdout);
                return 0;
        }
        if (strcmp(cmd, "ping") == 0) {
                uint64_t rtt;
                if (cvc_ping(c, &rtt) < 0) {
                        fprintf(stderr, "cellvm: ping: %s\n", cvc_errmsg(c));
                        return EXIT_CONNECTION;
                }
                printf("pong in %.3f ms\n", (double)rtt / 1e6);
                return 0;
        }
        if (strcmp(cmd, "contexts") == 0)
                return simple_call(c, CV_MSG_CONTEXT_LIST, NULL, NULL, "contexts");
        if (strcmp(cmd, "context-create") == 0)
                return cmd_context_create(c, argc, argv);
        if (strcmp(cmd, "context-restart") == 0)
                return need_id(argc, argv, cmd)
                           ? simple_call(c, CV_MSG_CONTEXT_RESTART, "context", argv[1], NULL)
                           : EXIT_USAGE;
        if (strcmp(cmd, "context-remove") == 0)
                return need_id(argc, argv, cmd)
                           ? simple_call(c, CV_MSG_CONTEXT_REMOVE, "context", argv[1], NULL)
                           : EXIT_USAGE;
        if (strcmp(cmd, "interrupt") == 0)
                return argc <= 2 ? simple_call(c, CV_MSG_INTERRUPT, "context",
                                               argc == 2 ? argv[1] : NULL, NULL)
                                 : EXIT_USAGE;
        if ((strcmp(cmd, "put") == 0 || strcmp(cmd, "get") == 0) && argc != 3) {
                fprintf(stderr, "cellvm: usage: %s\n",
                        cmd[0] == 'p' ? "put LOCAL REMOTE" : "get REMOTE LOCAL");
                return EXIT_USAGE;
        }
        if (strcmp(cmd, "put") == 0)
                return file_result(c, "put", cvc_put(c, argv[1], argv[2]));
        if (strcmp(cmd, "get") == 0)
                return file_result(c, "get", cvc_get(c, argv[1], argv[2]));
        if (strcmp(cmd, "ls") == 0)
                return argc <= 2
                           ? file_result(c, "ls", cvc_ls(c, argc == 2 ? argv[1] : ".", stdout))
                           : EXIT_USAGE;
        if (strcmp(cmd, "sh") == 0)
                return cmd_sh(c, argc, argv);
        fprintf(stderr, "cellvm: unknown command '%s' (see cellvm --help)\n", cmd);
        return EXIT_USAGE;
}

static int known_command(const char *cmd)
{
        static const char *const cmds[] = {"exec",
                                           "info",
                                           "ping",
                                           "contexts",
                                           "context-create",
                                           "context-restart",
                                           "context-remove",
                                           "interrupt",
                                           "put",
                                           "get",
                                           "ls",
                                           "sh"};
        for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
                if (strcmp(cmd, cmds[i]) == 0)
                        return 1;
        return 0;
}

int main(int argc, char **argv)
{
        const char *addr = getenv("CELLVM_ADDR");
        int i = 1;
        for (; i < argc && argv[i][0] == '-'; i++) {
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        fputs(usage, stdout);
                        return 0;
                }
                if (strcmp(argv[i], "--version") == 0) {
                        printf("cellvm %s (protocol 1)\n", CVC_VERSION);
                        return 0;
                }
                if (strcmp(argv[i], "--connect") == 0 && i + 1 < argc) {
                        addr = argv[++i];
                        continue;
                }
                if (strncmp(argv[i], "--connect=", 10) == 0) {
                        addr = argv[i] + 10;
                        continue;
                }
                fprintf(stderr, "cellvm: unknown option %s\n%s", argv[i], usage);
                return EXIT_USAGE;
        }
        if (i == argc) {
                fputs(usage, stderr);
                return EXIT_USAGE;
        }
        if (!known_command(argv[i])) {
                fprintf(stderr, "cellvm: unknown command '%s' (see cellvm --help)\n", argv[i]);
                return EXIT_USAGE;
        }
        if (!addr) {
                fputs("cellvm: no agent address: pass --connect ADDR or set CELLVM_ADDR\n", stderr);
                return EXIT_USAGE;
        }
        struct cvc *c = NULL;
        if (cvc_connect(addr, &c) < 0) {
                fprintf(stderr, "cellvm: %s\n", c ? cvc_errmsg(c) : "out of memory");
                cvc_close(c);
                return EXIT_CONNECTION;
        }
        int rc = run_command(c, argc - i, argv + i);
        cvc_close(c);
        return rc;
}
