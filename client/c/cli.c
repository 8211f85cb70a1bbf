/* `cellvm`: the command-line client of libcellvm. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cbor_util.h"
#include "cellvm.h"
#include "cli_fork.h"
#include "cli_help.h"
#include "cli_pause.h"
#include "cli_sandboxes.h"
#include "cli_snapshots.h"
#include "cli_snapshot.h"
#include "host_tsc.h"
#include "mono_clock.h"
#include "registry.h"
#include "keeper.h"
#include "cli_egress.h"
#include "egress_keeper.h"
#include "pass_fd.h"
#include "msgtypes.h"
#include "print_json.h"
#include "snapshot_qemu.h"
#include "vmm.h"

enum {
        EXIT_EXEC_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_CONNECTION = 3,
        EXIT_TIMEOUT = 124,
};

#define MAX_ENVS 64
#define MAX_CODE (64u * 1024u * 1024u)
#define BOOT_TIMEOUT_S 300 /* to the agent's HELLO; ~3 s under TCG, far less with KVM */
#define MAX_LINE (1u << 20)

static const char usage[] =
    "usage: cellvm [--connect ADDR] COMMAND [ARGS]\n"
    "       cellvm --version | --help | COMMAND --help\n"
    "\n"
    "Talks to a cellvm-agent. ADDR is unix:PATH, tcp:HOST:PORT or vsock:CID:PORT\n"
    "(default: $CELLVM_ADDR).\n"
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
    "  shutdown [--reboot]       power the guest off cleanly (with --reboot: init's\n"
    "                            configured shutdown action); needs cellvm-init\n"
    "  put LOCAL REMOTE | get REMOTE LOCAL | ls [DIR] | sh [--timeout SEC] 'cmd'\n"
    "                            files and shell commands in the sandbox (sh exits with\n"
    "                            the command's own status)\n"
    "\n"
    "In a micro-VM of its own (QEMU -M microvm, KVM when usable, else TCG; or Firecracker or\n"
    "Cloud Hypervisor, which need KVM; no --connect):\n"
    "  run [vm options] [-e KEY=VALUE]... [-t SEC] [-o DIR] -- CODE|-\n"
    "                            boot the image, run CODE as exec does (same output,\n"
    "                            images, exit status; exec's -e, -t, -o), stop the VM\n"
    "  mcp [--image DIR] [--memory MB] [--vcpus N]\n"
    "                            an MCP server on stdio (tools run_code, files, commands\n"
    "                            in a sandbox of its own; docs/MCP.md)\n"
    "  serve [options]           E2B's HTTP protocols (its API, envd, the code\n"
    "                            interpreter) for E2B's own SDKs, in front of sandboxes\n"
    "                            of this image: see cellvm serve --help, docs/SERVE.md\n"
    "  shell [vm options] [-o DIR] [--delim LINE]\n"
    "                            boot the image and read cells from stdin: a cell ends\n"
    "                            at a blank line or a line ';;' (with --delim LINE only\n"
    "                            at that line, so cells may hold blank lines) and at\n"
    "                            end of input; each runs in the default context as exec\n"
    "                            would print it. Ctrl-C interrupts the running cell (at\n"
    "                            the prompt: drops the cell being typed); Ctrl-D (end of\n"
    "                            input) runs what is pending, stops the VM and exits 0\n"
    "      --image DIR           the `make image` output (default: $CELLVM_IMAGE, else\n"
    "                            build/image)\n"
    "      --vmm qemu|firecracker|cloud-hypervisor\n"
    "                            the VMM (default qemu), found on PATH; Firecracker and\n"
    "                            Cloud Hypervisor boot the image's vmlinux and the agent\n"
    "                            answers over their hybrid vsock (--vsock is QEMU's)\n"
    "      --memory MB           guest RAM in MiB, a whole number (default 1024); user code\n"
    "                            gets RAM minus max(128 MiB, RAM/8), at least 64 MiB,\n"
    "                            through the guest's cgroup\n"
    "      --vcpus N             guest CPUs, a whole number (default 1)\n"
    "      --boot-timeout SEC    wait this long for the agent (default 300)\n"
    "      --kernel PATH         boot this kernel (e.g. build/kernel/bzImage of `make kernel`)\n"
    "      --initramfs PATH|none another initramfs, or none: the kernel mounts the root\n"
    "                            itself (root=/dev/vda ro init=/sbin/cellvm-init); needs a\n"
    "                            kernel with the drivers built in (`make kernel`)\n"
    "      --rootfs PATH         another root image, ext4 or erofs (rootfstype= follows)\n"
    "      --network none|user   (QEMU) no NIC, loopback only (default), or a virtio-net\n"
    "                            NIC on QEMU's user-mode NAT (guest 10.0.2.15/24,\n"
    "                            gateway 10.0.2.2, DNS 10.0.2.3)\n"
    "      --cmdline-extra WORDS appended to the guest kernel's command line (e.g.\n"
    "                            cellvm.debug=1; docs/INIT.md)\n"
    "      --vsock auto|on|off   (QEMU) the agent channel: vsock (a vhost-vsock device; auto: "
    "when\n"
    "                            /dev/vhost-vsock opens) or the virtio-serial port, which\n"
    "                            is also the fallback (default auto); on: boots cold\n"
    "      --no-snapshot         boot the image cold instead of restoring its template\n"
    "                            (also $CELLVM_SNAPSHOT=0)\n"
    "      --from-template       restore from its template even with $CELLVM_SNAPSHOT=0\n"
    "      --snapshot DIR        restore this template (a directory of `cellvm snapshot\n"
    "                            list`, or one of its t-* snapshots): an error if it cannot\n"
    "      -v, --verbose         (run) say how the VM started, booted or restored and its\n"
    "                            stages, on stderr even when it is not a terminal\n"
    "  By default the VM is restored from the template of its launch (image, boot files,\n"
    "  memory, vCPUs, VMM: docs/SNAPSHOTS.md), made on first use (the image booted and\n"
    "  saved with its preloads done, about 15-50 s under TCG, depending on load, said on\n"
    "  stderr) and shared with the Python SDK's Sandbox.create(); a restore takes well\n"
    "  under a second. A template made for something that changed since (image rebuilt,\n"
    "  QEMU upgraded) or whose files do not match its manifest is rebuilt; one that\n"
    "  cannot be restored is removed and the VM boots cold; both say what is wrong on\n"
    "  stderr. Each restored VM gets fresh entropy, this host's clock and a generation\n"
    "  of its own.\n"
    "  The VM is killed and its temp files removed on exit, on Ctrl-C twice, and on\n"
    "  SIGTERM/SIGHUP; it also dies with this process (PR_SET_PDEATHSIG).\n"
    "  run's --timeout SEC is also the sandbox's lifetime: its guest and any cellvm\n"
    "  process end it SEC + 10 s after boot (without it: $CELLVM_MAX_TIMEOUT, 24 h).\n"
    "\n"
    "Live sandboxes of this user (any cellvm process's, from the registry in\n"
    "$CELLVM_RUNTIME_DIR, else $XDG_RUNTIME_DIR/cellvm, else /tmp/cellvm-UID; no --connect):\n"
    "  keep KEY                  (plumbing) fork the keeper of live sandbox KEY, print its\n"
    "                            pid\n"
    "  egress-keep KEY VMDIR     (plumbing) the egress keeper of a sandbox, in the\n"
    "                            foreground (create --egress and egress start it)\n"
    "  create [vm options] [--timeout S] [--metadata K=V]... [--template NAME] [--json]\n"
    "                            a sandbox from the template (as run's VM) that outlives\n"
    "                            this command until its deadline, S s from now (default\n"
    "                            $CELLVM_DEFAULT_TIMEOUT, 300); prints its entry as JSON\n"
    "                            (always; --json is accepted for the SDK)\n"
    "                            (sandbox_id, address, pid, deadline_ms, ...): the SDK's\n"
    "                            Sandbox.create() runs it and connects to the address\n"
    "                            (--pass-fd N: gets the connection; --holder PID: holds it)\n"
    "                            (--egress RULES: E2B's network object as JSON, enforced\n"
    "                            by the host through the guest's proxy: docs/NETWORK.md)\n"
    "                            (--on-timeout pause: E2B's lifecycle; at its deadline its\n"
    "                            keeper pauses it instead of killing it: cellvm pause)\n"
    "                            (--template NAME of a kept snapshot: a copy of that\n"
    "                            snapshot resumed, with a generation of its own and the\n"
    "                            snapshot's memory and vCPUs: vm options do not apply;\n"
    "                            another NAME is only recorded: it boots from the image's\n"
    "                            template, with a warning on stderr)\n"
    "  egress [--json] ID [RULES] a live sandbox's egress rules: shown, or replaced\n"
    "  set-timeout [--registry-only] [--json] ID S\n"
    "                            its deadline S s from now (registry and guest)\n"
    "  hold [--release] ID PID   (plumbing) process PID holds ID's agent channel (the SDK)\n"
    "  host-tsc [--measure]      this host's TSC frequency in kHz as TCG guests are told\n"
    "  ps [--json]               list them: key, age, time left, VMM pid, memory (RSS/RAM),\n"
    "                            state, sandbox id; ends those past deadline + grace; then\n"
    "                            the paused ones (the SDK's pause(), in $CELLVM_PAUSED_DIR,\n"
    "                            else $XDG_STATE_HOME/cellvm/paused), state \"paused\"\n"
    "  kill ID... | kill --all   stop them (ID: the key or the sandbox id); kill ID of a\n"
    "                            paused one removes its saved state; --all stops the\n"
    "                            running ones and keeps the paused\n"
    "  pause [--json] ID         save a live sandbox's whole state (restored from a template)\n"
    "                            into the paused store and stop its VMM; it keeps its id\n"
    "  resume [--json] [--timeout S] ID\n"
    "                            run a paused sandbox again, under the same id, with a\n"
    "                            deadline S s from now (default 300); see pause --help\n"
    "  fork [--json] [--count N] [--timeout S] ID\n"
    "                            copy a live sandbox into N new ones (E2B's fork): it is\n"
    "                            saved once and runs on; see fork --help\n"
    "  create-snapshot [--json] [--name NAME] ID | list-snapshots [--json] | delete-snapshot REF\n"
    "                            E2B's snapshots API: keep a live sandbox's state (it runs\n"
    "                            on) for new ones, made by create --template SNAPSHOT_ID\n"
    "  Limits: $CELLVM_MAX_SANDBOXES live sandboxes (20), $CELLVM_MAX_TIMEOUT s (86400);\n"
    "  $CELLVM_DEADLINE_GRACE s (10) after a deadline before the host kills a VMM.\n"
    "\n"
    "Templates run and shell restore from (no --connect; see cellvm snapshot --help):\n"
    "  snapshot create|check|manifest [vm options] | snapshot list | snapshot remove NAME...\n"
    "\n"
    "Kubernetes (docs/KUBERNETES.md; see cellvm kube --help):\n"
    "  kube manifests --image REF [options]\n"
    "                            print agent-sandbox's objects for cellvm's pod image\n"
    "\n"
    "exit status: 0 success, 1 the code raised an error (or a missing context, a file\n"
    "error), 2 usage (or a bad option value), 3 connection or protocol failure (or the\n"
    "VM did not boot), 124 timeout; sh: the command's own status. Ctrl-C during exec\n"
    "interrupts the cell.\n";

static const char snapshot_usage[] =
    "usage: cellvm snapshot COMMAND [options]\n"
    "\n"
    "The templates `cellvm run`, `cellvm shell` and the Python SDK's Sandbox.create()\n"
    "restore their VMs from (docs/SNAPSHOTS.md): one per launch (image, boot files,\n"
    "memory, vCPUs, kernel command line, QEMU and its version), in\n"
    "$CELLVM_TEMPLATE_DIR, else $XDG_CACHE_HOME/cellvm/templates, else\n"
    "~/.cache/cellvm/templates (`make snapshot` builds build/image's).\n"
    "\n"
    "commands:\n"
    "  create [vm options] [--force]\n"
    "                            build the template of a launch: the image booted, its\n"
    "                            preloads done, saved (about 15-50 s under TCG, depending\n"
    "                            on load); \"up to date\" when one fits already (--force:\n"
    "                            build it anyway)\n"
    "  check [vm options]        does the stored template fit the launch? says what\n"
    "                            differs (exit 1: none built yet, or it does not fit)\n"
    "  manifest [vm options]     print the manifest a template of the launch has (what\n"
    "                            check compares; its state's size and times are 0)\n"
    "  list                      the templates: size, image, snapshot in use\n"
    "  remove NAME... | --all    remove templates (not one a restore is reading)\n"
    "\n"
    "vm options, as cellvm run's: --image DIR, --memory MB (or --memory-mb MB),\n"
    "  --vcpus N, --kernel PATH, --initramfs PATH|none, --rootfs PATH, --vmm qemu\n"
    "  (or firecracker, cloud-hypervisor: their templates are saved through the VMM's API),\n"
    "  --network none|user, --cmdline-extra WORDS\n"
    "\n"
    "exit status: 0 success, 1 failure (or check: no fitting template), 2 usage.\n";

int cmd_serve(int argc, char **argv); /* serve_main.c */
int cmd_kube(int argc, char **argv);  /* kube_manifests.c */
int cmd_mcp(int argc, char **argv);   /* mcp_stdio.c */

static volatile sig_atomic_t interrupted;
/* The VM of `run`/`shell`: killed by the handlers below before exiting. */
static struct cvm the_vm;
static struct sbx_rec the_rec;

static void on_sigint(int sig)
{
        (void)sig;
        if (interrupted) { /* second Ctrl-C: give up waiting */
                cvm_kill(&the_vm);
                csq_abort_build();
                sbx_forget(&the_rec);
                _exit(130);
        }
        interrupted = 1;
}

/* SIGTERM, SIGHUP, SIGQUIT, and SIGINT while booting: stop the VM and leave. */
static void on_fatal_signal(int sig)
{
        cvm_kill(&the_vm);
        csq_abort_build();
        sbx_forget(&the_rec);
        _exit(128 + sig);
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

/* Seconds to whole milliseconds, rounded up: a timeout under 1 ms is 1 ms,
 * not 0 (no timeout). */
static uint64_t seconds_to_ms(double s)
{
        double ms = s * 1000.0;
        uint64_t whole = (uint64_t)ms;
        return (double)whole < ms ? whole + 1 : whole;
}

/* Set when read_all failed reading (a file error, exit 1) rather than on size. */
static bool read_all_failed;

static char *read_all(FILE *f)
{
        size_t cap = 1 << 16, len = 0;
        char *buf = malloc(cap);
        while (buf) {
                size_t n = fread(buf + len, 1, cap - len - 1, f);
                len += n;
                if (n == 0 && ferror(f)) {
                        fprintf(stderr, "cellvm: reading the code from stdin: %s\n",
                                strerror(errno));
                        read_all_failed = true;
                        free(buf);
                        return NULL;
                }
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

/* Runs one cell, printing its output; the CLI's exit status for it. */
static int run_cell(struct cvc *c, const struct cvc_exec_opts *eo, struct exec_out *out)
{
        struct cvc_exec_status st;
        out->io_error = 0;
        int rc = cvc_execute(c, eo, on_event, out, &st);
        if (rc < 0) {
                fprintf(stderr, "cellvm: exec: %s\n", cvc_errmsg(c));
                /* The agent refused it (e.g. no such context): as context-restart. */
                return rc == -EREMOTEIO ? EXIT_EXEC_ERROR : EXIT_CONNECTION;
        }
        if (st.timed_out) {
                fprintf(stderr, "cellvm: execution timed out\n");
                return EXIT_TIMEOUT;
        }
        return st.error || out->io_error ? EXIT_EXEC_ERROR : 0;
}

/* The commands that talk to an agent: their usage, and how many operands
 * they take (min, max; -1: the command parses its own options). */
struct agent_cmd {
        const char *name;
        int min, max;
        const char *usage;
};

static const struct agent_cmd agent_cmds[] = {
    {"exec", -1, -1,
     "usage: cellvm [--connect ADDR] exec [options] CODE|-\n"
     "Runs Python code ('-' reads it from stdin) and prints its output; images are\n"
     "written as PNG/JPEG files.\n"
     "  -c, --context ID      run in this context (default: the default context)\n"
     "  -e, --env KEY=VALUE   environment variable for this execution (repeatable)\n"
     "  -t, --timeout SEC     interrupt the cell after SEC seconds (exit 124)\n"
     "  -o, --out-dir DIR     where images go (default: .), named cellvm-N-K.png\n"
     "exit status: 0 success, 1 the code raised an error (or no such context), 2 usage,\n"
     "3 connection or protocol failure, 124 timeout.\n"},
    {"info", 0, 0,
     "usage: cellvm [--connect ADDR] info\n"
     "Prints the agent's handshake (versions, capabilities, boot times) as JSON.\n"},
    {"ping", 0, 0, "usage: cellvm [--connect ADDR] ping\nMeasures one round trip to the agent.\n"},
    {"contexts", 0, 0, "usage: cellvm [--connect ADDR] contexts\nLists the contexts.\n"},
    {"context-create", -1, -1,
     "usage: cellvm [--connect ADDR] context-create [--cwd DIR]\n"
     "Creates a context and prints its id.\n"},
    {"context-restart", 1, 1,
     "usage: cellvm [--connect ADDR] context-restart ID\n"
     "Gives context ID a fresh namespace (exit 1: no such context).\n"},
    {"context-remove", 1, 1,
     "usage: cellvm [--connect ADDR] context-remove ID\n"
     "Removes context ID (exit 1: no such context).\n"},
    {"interrupt", 0, 1,
     "usage: cellvm [--connect ADDR] interrupt [ID]\n"
     "Interrupts the running cell of context ID (default: the default context).\n"},
    {"put", 2, 2,
     "usage: cellvm [--connect ADDR] put LOCAL REMOTE\n"
     "Copies local file LOCAL to REMOTE in the sandbox (exit 1: a file error).\n"},
    {"get", 2, 2,
     "usage: cellvm [--connect ADDR] get REMOTE LOCAL\n"
     "Copies file REMOTE of the sandbox to local file LOCAL (exit 1: a file error).\n"},
    {"ls", 0, 1,
     "usage: cellvm [--connect ADDR] ls [DIR]\n"
     "Lists directory DIR of the sandbox (default: its working directory).\n"},
    {"sh", -1, -1,
     "usage: cellvm [--connect ADDR] sh [--timeout SEC] 'command'\n"
     "Runs the command with bash -c in the sandbox; prints its output.\n"
     "exit status: the command's own exit status (so 1, 2, ... may be the command's),\n"
     "else 2 usage of cellvm, 3 connection or protocol failure, 124 timeout.\n"},
    {"shutdown", -1, -1,
     "usage: cellvm [--connect ADDR] shutdown [--reboot]\n"
     "Powers the guest off cleanly (with --reboot: init's configured shutdown action);\n"
     "needs cellvm-init.\n"},
};

static const struct agent_cmd *find_agent_cmd(const char *cmd)
{
        for (size_t i = 0; i < sizeof(agent_cmds) / sizeof(agent_cmds[0]); i++)
                if (strcmp(cmd, agent_cmds[i].name) == 0)
                        return &agent_cmds[i];
        return NULL;
}

/* Before connecting: --help, and the operand count of the simple commands.
 * Returns -1 to go on, else the exit status. */
static int check_agent_args(const struct agent_cmd *ac, int argc, char **argv)
{
        if (argc >= 2 && cli_is_help(argv[1])) {
                fputs(ac->usage, stdout);
                return 0;
        }
        /* exec's --help among its options, as getopt would see it. */
        for (int i = 1; strcmp(ac->name, "exec") == 0 && i < argc; i++) {
                const char *a = argv[i];
                if (cli_is_help(a)) {
                        fputs(ac->usage, stdout);
                        return 0;
                }
                if (a[0] != '-' || strcmp(a, "-") == 0 || strcmp(a, "--") == 0)
                        break;
                if (strlen(a) == 2 && strchr("ceto", a[1]))
                        i++; /* its value */
        }
        if (ac->min < 0)
                return -1;
        int n = argc - 1;
        if (n < ac->min || n > ac->max) {
                const char *nl = strchr(ac->usage, '\n');
                fprintf(stderr, "cellvm: %s takes %s (%.*s)\n", ac->name,
                        ac->max == 0 ? "no arguments"
                        : ac->min == ac->max
                            ? (ac->min == 1 ? "exactly one argument" : "exactly two arguments")
                            : "at most one argument",
                        (int)(nl - ac->usage), ac->usage);
                return EXIT_USAGE;
        }
        return -1;
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
                        eo.timeout_ms = seconds_to_ms(s);
                        break;
                }
                case 'o':
                        out.out_dir = optarg;
                        break;
                case 'h':
                        fputs(find_agent_cmd("exec")->usage, stdout);
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
                        return read_all_failed ? EXIT_EXEC_ERROR : EXIT_USAGE;
        }
        eo.code = code ? code : argv[optind];
        eo.envs = nenv ? envs : NULL;

        struct sigaction sa = {.sa_handler = on_sigint};
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGINT, &sa, NULL) < 0)
                perror("cellvm: sigaction");

        int rc = run_cell(c, &eo, &out);
        free(code);
        return rc;
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

static int cmd_shutdown(struct cvc *c, int argc, char **argv)
{
        bool reboot = argc == 2 && strcmp(argv[1], "--reboot") == 0;
        if (argc > 2 || (argc == 2 && !reboot)) {
                fprintf(stderr, "cellvm: usage: shutdown [--reboot]\n");
                return EXIT_USAGE;
        }
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "poweroff");
        cv_enc_bool(&b, !reboot);
        int rc = cvc_call_buf(c, CV_MSG_SHUTDOWN, &b, NULL);
        cv_buf_free(&b);
        if (rc < 0) {
                fprintf(stderr, "cellvm: shutdown: %s\n", cvc_errmsg(c));
                return rc == -EREMOTEIO ? EXIT_EXEC_ERROR : EXIT_CONNECTION;
        }
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
        /* The agent's refusal or a local file's error; else the connection's. */
        switch (-rc) {
        case EREMOTEIO:
        case ENOENT:
        case EACCES:
        case EPERM:
        case EISDIR:
        case ENOTDIR:
        case ENOSPC:
        case EROFS:
        case EEXIST:
        case ENAMETOOLONG:
        case ELOOP:
        case EFBIG:
        case EDQUOT:
                return EXIT_EXEC_ERROR;
        default:
                return EXIT_CONNECTION;
        }
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
                timeout_ms = seconds_to_ms(s);
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
        if (strcmp(cmd, "shutdown") == 0)
                return cmd_shutdown(c, argc, argv);
        fprintf(stderr, "cellvm: unknown command '%s' (see cellvm --help)\n", cmd);
        return EXIT_USAGE;
}

/* --- run / shell: a micro-VM of our own ------------------------------------ */

struct vm_cmd {
        struct cvm_opts vm;
        const char *vmm;
        double boot_timeout_s;
        const char *envs[MAX_ENVS + 1];
        size_t nenv;
        struct cvc_exec_opts eo;
        struct exec_out out;
        const char *delim; /* shell: the only cell terminator, or NULL */
        double lifetime_s; /* the sandbox's timeout (registry, guest deadline) */
        unsigned user_mb;  /* cellvm.mem_limit: user code's share of the RAM */
        char extra[128];
        enum snap_mode snapshot; /* from a template (AUTO, or DIR: snapshot_dir) or cold */
        const char *snapshot_dir;
        bool verbose;              /* say how the VM started even when stderr is no terminal */
        bool force;                /* snapshot create: build even if one fits */
        const char *template_name; /* create: E2B's template name, into the registry */
        json_t *metadata;          /* create: --metadata K=V, an object */
        int pass_fd;               /* create: a unix socket to hand the agent connection to, or 0 */
        pid_t holder;              /* create: the process that holds the connection, or 0 */
        json_t *egress;            /* create: --egress RULES as kept (egress_keeper.h), or NULL */
        struct snap_report report; /* how the VM was restored */
        bool pausable;             /* create: a cold boot gets a QMP socket too */
        bool pause_at_timeout;     /* create --on-timeout pause: its keeper pauses it then */
};

/* Which command's VM options are parsed. */
enum vm_kind { VM_RUN, VM_SHELL, VM_SNAPSHOT, VM_CREATE };

static int parse_positive(const char *what, const char *s, double max, double *v)
{
        char *end;
        *v = strtod(s, &end);
        if (*end || !(*v > 0) || *v > max) {
                fprintf(stderr, "cellvm: bad %s %s\n", what, s);
                return -EINVAL;
        }
        return 0;
}

/* A whole number in [min, max] (counts, MiB): no fraction, sign or exponent. */
static int parse_whole(const char *what, const char *s, unsigned long min, unsigned long max,
                       unsigned *v)
{
        char *end;
        errno = 0;
        unsigned long n = s[0] >= '0' && s[0] <= '9' ? strtoul(s, &end, 10) : 0;
        if (!(s[0] >= '0' && s[0] <= '9') || *end || errno || n < min || n > max) {
                fprintf(stderr, "cellvm: bad %s %s: a whole number from %lu to %lu\n", what, s, min,
                        max);
                return -EINVAL;
        }
        *v = (unsigned)n;
        return 0;
}

/* Options of run/shell; returns the index of the first operand or -1. */
static int parse_vm_options(struct vm_cmd *v, enum vm_kind kind, int argc, char **argv)
{
        static const struct option opts[] = {
            {"image", required_argument, NULL, 'i'},
            {"vmm", required_argument, NULL, 'V'},
            {"memory", required_argument, NULL, 'm'},
            {"memory-mb", required_argument, NULL, 'm'}, /* the old snapshot_cli's name */
            {"no-snapshot", no_argument, NULL, 'N'},
            {"from-template", no_argument, NULL, 'U'},
            {"snapshot", required_argument, NULL, 'P'},
            {"verbose", no_argument, NULL, 'v'},
            {"force", no_argument, NULL, 'F'},
            {"vcpus", required_argument, NULL, 'n'},
            {"boot-timeout", required_argument, NULL, 'B'},
            {"kernel", required_argument, NULL, 'K'},
            {"initramfs", required_argument, NULL, 'I'},
            {"rootfs", required_argument, NULL, 'R'},
            {"vsock", required_argument, NULL, 'S'},
            {"env", required_argument, NULL, 'e'},
            {"timeout", required_argument, NULL, 't'},
            {"out-dir", required_argument, NULL, 'o'},
            {"delim", required_argument, NULL, 'd'},
            {"help", no_argument, NULL, 'h'},
            {"metadata", required_argument, NULL,
             'M'}, /* create only, as template, json, pass-fd */
            {"template", required_argument, NULL, 'T'},
            {"network", required_argument, NULL, 'w'},
            {"cmdline-extra", required_argument, NULL, 'X'},
            {"json", no_argument, NULL, 'j'},
            {"pass-fd", required_argument, NULL, 'A'},
            {"holder", required_argument, NULL, 'H'},
            {"egress", required_argument, NULL, 'G'},
            {"on-timeout", required_argument, NULL, 'Y'},
            {NULL, 0, NULL, 0},
        };
        const char *image = getenv("CELLVM_IMAGE");
        v->vm.image = image && image[0] ? image : "build/image";
        v->vm.memory_mb = 1024;
        v->vm.vcpus = 1;
        v->vmm = "qemu";
        v->boot_timeout_s = BOOT_TIMEOUT_S;
        v->out.out_dir = ".";
        v->eo.interrupt = &interrupted;
        bool is_run = kind == VM_RUN, snapshot_cmd = kind == VM_SNAPSHOT, mode_given = false;
        bool create = kind == VM_CREATE, lifetime_given = false, image_given = false;
        int opt;
        double d;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "+e:t:o:vh", opts, NULL)) != -1) {
                if (create != (strchr("MTjAHGY", opt) != NULL) && strchr("MTjAHGYeod", opt)) {
                        fputs(create ? "cellvm: create takes the VM options, --timeout, "
                                       "--metadata, --template, --json, --pass-fd, --holder, "
                                       "--egress and --on-timeout\n"
                                     : "cellvm: --metadata, --template, --json, --pass-fd, "
                                       "--holder, --egress and --on-timeout are create's\n",
                              stderr);
                        return -1;
                }
                if (snapshot_cmd && strchr("NUPvetodSB", opt)) {
                        fputs("cellvm: snapshot create/check/manifest take the VM options only "
                              "(see cellvm snapshot --help)\n",
                              stderr);
                        return -1;
                }
                if (!snapshot_cmd && opt == 'F') {
                        fputs("cellvm: --force is snapshot create's\n", stderr);
                        return -1;
                }
                switch (opt) {
                case 'U':
                        v->snapshot = SNAP_AUTO; /* whatever $CELLVM_SNAPSHOT says */
                        v->snapshot_dir = NULL;
                        mode_given = true;
                        break;
                case 'N':
                        v->snapshot = SNAP_OFF;
                        v->snapshot_dir = NULL;
                        mode_given = true;
                        break;
                case 'P':
                        v->snapshot = SNAP_DIR;
                        v->snapshot_dir = optarg;
                        mode_given = true;
                        break;
                case 'v':
                        v->verbose = true;
                        break;
                case 'F':
                        v->force = true;
                        break;
                case 'i':
                        v->vm.image = optarg;
                        image_given = true;
                        break;
                case 'V':
                        v->vmm = optarg;
                        break;
                case 'm':
                        if (parse_whole("--memory (MiB)", optarg, 128, 1 << 20, &v->vm.memory_mb) <
                            0)
                                return -1;
                        break;
                case 'n':
                        if (parse_whole("--vcpus", optarg, 1, 256, &v->vm.vcpus) < 0)
                                return -1;
                        break;
                case 'B':
                        if (parse_positive("--boot-timeout", optarg, 86400, &v->boot_timeout_s) < 0)
                                return -1;
                        break;
                case 'K':
                        v->vm.kernel = optarg;
                        break;
                case 'I':
                        v->vm.no_initramfs = strcmp(optarg, "none") == 0;
                        v->vm.initramfs = v->vm.no_initramfs ? NULL : optarg;
                        break;
                case 'R':
                        v->vm.rootfs = optarg;
                        break;
                case 'S':
                        if (strcmp(optarg, "auto") == 0)
                                v->vm.vsock = CVM_VSOCK_AUTO;
                        else if (strcmp(optarg, "on") == 0)
                                v->vm.vsock = CVM_VSOCK_ON;
                        else if (strcmp(optarg, "off") == 0)
                                v->vm.vsock = CVM_VSOCK_OFF;
                        else {
                                fputs("cellvm: --vsock takes auto, on or off\n", stderr);
                                return -1;
                        }
                        break;
                case 'e':
                        if (!is_run || v->nenv == MAX_ENVS || !strchr(optarg, '=')) {
                                fprintf(stderr,
                                        "cellvm: --env takes KEY=VALUE (at most %d, run only)\n",
                                        MAX_ENVS);
                                return -1;
                        }
                        v->envs[v->nenv++] = optarg;
                        break;
                case 't':
                        if (!(is_run || create)) {
                                fputs("cellvm: --timeout is run's and create's (a shell's cells "
                                      "have none: Ctrl-C interrupts one)\n",
                                      stderr);
                                return -1;
                        }
                        if (parse_positive("--timeout", optarg, 1e7, &d) < 0)
                                return -1;
                        if (create)
                                v->lifetime_s = d, lifetime_given = true;
                        else
                                v->eo.timeout_ms = seconds_to_ms(d);
                        break;
                case 'M': {
                        const char *eq = strchr(optarg, '=');
                        if (!eq || eq == optarg) {
                                fputs("cellvm: --metadata takes KEY=VALUE\n", stderr);
                                return -1;
                        }
                        if (!v->metadata)
                                v->metadata = json_object();
                        json_t *val = json_string(eq + 1);
                        if (!val || json_object_setn_new(v->metadata, optarg, (size_t)(eq - optarg),
                                                         val) < 0) {
                                fputs("cellvm: --metadata: not UTF-8 text\n", stderr);
                                return -1;
                        }
                        break;
                }
                case 'T':
                        v->template_name = optarg;
                        break;
                case 'w':
                        if (strcmp(optarg, "none") != 0 && strcmp(optarg, "user") != 0) {
                                fputs("cellvm: --network takes none (loopback only) or user "
                                      "(QEMU's user-mode NAT)\n",
                                      stderr);
                                return -1;
                        }
                        v->vm.user_net = strcmp(optarg, "user") == 0;
                        break;
                case 'X':
                        if (strpbrk(optarg, "\r\n") || strlen(optarg) >= CVM_CMDLINE_MAX / 2) {
                                fputs("cellvm: --cmdline-extra takes one line of kernel "
                                      "words\n",
                                      stderr);
                                return -1;
                        }
                        v->vm.cmdline_extra = optarg[0] ? optarg : NULL;
                        break;
                case 'j':
                        break; /* create prints JSON only */
                case 'A':
                        if (cli_parse_fd(optarg, &v->pass_fd) < 0) {
                                fputs("cellvm: --pass-fd takes an fd number >= 3\n", stderr);
                                return -1;
                        }
                        break;
                case 'G': {
                        char why[600];
                        json_decref(v->egress);
                        if (cegress_rules_parse(optarg, &v->egress, why, sizeof(why)) < 0) {
                                fprintf(stderr, "cellvm: --egress: %s\n", why);
                                return -1;
                        }
                        break;
                }
                case 'Y':
                        if (strcmp(optarg, "pause") != 0 && strcmp(optarg, "kill") != 0) {
                                fputs("cellvm: --on-timeout takes pause or kill\n", stderr);
                                return -1;
                        }
                        v->pause_at_timeout = strcmp(optarg, "pause") == 0;
                        break;
                case 'H':
                        if (sbx_parse_pid(optarg, &v->holder) < 0) {
                                fputs("cellvm: --holder takes a pid\n", stderr);
                                return -1;
                        }
                        break;
                case 'o':
                        v->out.out_dir = optarg;
                        break;
                case 'd':
                        if (is_run || !optarg[0]) {
                                fputs("cellvm: --delim takes a non-empty LINE (shell only)\n",
                                      stderr);
                                return -1;
                        }
                        v->delim = optarg;
                        break;
                case 'h':
                        fputs(snapshot_cmd ? snapshot_usage : usage, stdout);
                        exit(0);
                default:
                        return -1;
                }
        }
        /* $CELLVM_SNAPSHOT when no option says (as create(snapshot=None)). */
        if (!snapshot_cmd && !mode_given && snap_env_mode(&v->snapshot) < 0)
                return -1;
        if (cvm_vmm_parse(v->vmm, &v->vm.vmm) < 0) {
                fprintf(stderr,
                        "cellvm: --vmm takes qemu, firecracker or cloud-hypervisor, not %s\n",
                        v->vmm);
                return -1;
        }
        if (v->vm.vmm != CVM_VMM_QEMU) {
                if (v->vm.vsock != CVM_VSOCK_AUTO) {
                        fprintf(stderr,
                                "cellvm: --vsock is QEMU's: %s always uses its hybrid vsock\n",
                                v->vmm);
                        return -1;
                }
                if (v->vm.user_net) {
                        fprintf(stderr,
                                "cellvm: --network user is QEMU's: %s would need a tap "
                                "device\n",
                                v->vmm);
                        return -1;
                }
        }
        /* Files that do not exist are a bad option value, not a failed boot. */
        const struct {
                const char *opt, *path;
                bool dir;
        } files[] = {
            {image_given ? "--image" : "the image (--image DIR, $CELLVM_IMAGE, build/image)",
             v->vm.image, true},
            {"--kernel", v->vm.kernel, false},
            {"--initramfs", v->vm.initramfs, false},
            {"--rootfs", v->vm.rootfs, false},
            {"--snapshot", v->snapshot == SNAP_DIR ? v->snapshot_dir : NULL, true}};
        for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
                struct stat st;
                if (!files[k].path)
                        continue;
                const char *why = stat(files[k].path, &st) < 0          ? strerror(errno)
                                  : S_ISDIR(st.st_mode) == files[k].dir ? NULL
                                  : files[k].dir                        ? "not a directory"
                                                                        : "a directory, not a file";
                if (why) {
                        fprintf(stderr, "cellvm: %s %s: %s%s\n", files[k].opt, files[k].path, why,
                                k == 0 ? " (build it with `make image`)" : "");
                        return -1;
                }
        }
        v->user_mb = cvm_user_memory_mb(v->vm.memory_mb);
        /* run --timeout bounds the whole sandbox; 10 s more so that the cell's
         * interrupt is reported before the guest ends. */
        if (create && !lifetime_given) {
                /* E2B's default lifetime, as the SDK's create(). */
                if (sbx_default_timeout(&v->lifetime_s) < 0)
                        return -1;
        } else if (!create) {
                v->lifetime_s = v->eo.timeout_ms ? (double)v->eo.timeout_ms / 1000.0 + 10.0
                                                 : creg_max_timeout_s();
        }
        double max_t = creg_max_timeout_s();
        if ((v->eo.timeout_ms && (double)v->eo.timeout_ms / 1000.0 > max_t) ||
            (create && v->lifetime_s > max_t)) {
                /* E2B's wording, as sbx_reserve's */
                if (max_t >= 3600 && max_t == (double)(long)(max_t / 3600) * 3600)
                        fprintf(stderr,
                                "cellvm: bad --timeout: Timeout cannot be greater than "
                                "%ld hours\n",
                                (long)(max_t / 3600));
                else
                        fprintf(stderr,
                                "cellvm: bad --timeout: Timeout cannot be greater than "
                                "%g seconds\n",
                                max_t);
                fputs("cellvm: (the maximum sandbox timeout, $CELLVM_MAX_TIMEOUT)\n", stderr);
                return -1;
        }
        if (v->eo.timeout_ms && v->lifetime_s > max_t)
                v->lifetime_s = (double)v->eo.timeout_ms / 1000.0; /* no slack left */
        /* The guest's provisional deadline: boot budget + lifetime (TCG slack). */
        snprintf(
            v->extra, sizeof(v->extra), "cellvm.mem_limit=%uM cellvm.deadline_ms=%llu", v->user_mb,
            (unsigned long long)(sbx_guest_timeout_s(v->boot_timeout_s + v->lifetime_s, false) *
                                 1000));
        v->vm.extra = v->extra;
        v->eo.envs = v->nenv ? v->envs : NULL;
        return optind;
}

static void set_handler(int sig, void (*fn)(int))
{
        struct sigaction sa = {.sa_handler = fn}; /* no SA_RESTART: reads see EINTR */
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, &sa, NULL) < 0)
                fprintf(stderr, "cellvm: sigaction(%d): %s\n", sig, strerror(errno));
}

/* Boots the VM and connects; on failure prints why (with the console's tail). */
static int boot_vm(struct vm_cmd *v, struct cvc **c, bool verbose)
{
        set_handler(SIGTERM, on_fatal_signal);
        set_handler(SIGHUP, on_fatal_signal);
        set_handler(SIGQUIT, on_fatal_signal);
        set_handler(SIGINT, on_fatal_signal); /* nothing to interrupt while booting */
        double t0 = mono_s();
        char err[512], cold_why[1024] = "";
        int rc;
        /* A template has no vhost-vsock device: --vsock on boots cold. */
        if (v->snapshot != SNAP_OFF && v->vm.vsock != CVM_VSOCK_ON) {
                struct snap_run r = {.vm = &v->vm,
                                     .user_mb = v->user_mb,
                                     .lifetime_s = v->lifetime_s,
                                     .mode = v->snapshot,
                                     .dir = v->snapshot_dir,
                                     .verbose = verbose,
                                     .report = &v->report,
                                     .cold_why = cold_why,
                                     .cold_why_len = sizeof(cold_why)};
                rc = snap_restore_vm(&r, &the_rec, &the_vm, c);
                if (rc <= 0) {
                        if (rc == 0)
                                set_handler(SIGINT, on_sigint);
                        return rc;
                }
                t0 = mono_s(); /* rc 1: boot cold after all */
        }
        rc = sbx_reserve(v->lifetime_s);
        if (rc < 0)
                return rc;
        v->vm.qmp = v->pausable; /* create's: cellvm pause saves it over QMP */
        rc = cvm_start(&v->vm, &the_vm, err, sizeof(err));
        if (rc < 0) {
                sbx_release();
                fprintf(stderr, "cellvm: starting the VM: %s\n", err);
                cvm_print_console_tail(&the_vm, stderr, 3000);
                cvm_kill(&the_vm);
                return rc;
        }
        if (cold_why[0])
                fprintf(stderr, "cellvm: no usable template (%s): booting cold\n", cold_why);
        sbx_record(&the_rec, &the_vm, v->vm.image, v->vm.memory_mb, v->vm.vcpus, v->boot_timeout_s,
                   v->lifetime_s);
        rc = cvm_connect(&the_vm, (int)(v->boot_timeout_s * 1000), c);
        if (rc < 0) {
                fprintf(stderr, "cellvm: the agent in the VM did not answer: %s\n",
                        *c                ? cvc_errmsg(*c)
                        : the_vm.error[0] ? the_vm.error
                                          : strerror(-rc));
                cvm_print_console_tail(&the_vm, stderr, 3000);
                cvc_close(*c);
                *c = NULL;
                cvm_kill(&the_vm);
                sbx_forget(&the_rec);
                return rc;
        }
        sbx_start_clock(&the_rec, *c, &the_vm, v->lifetime_s);
        if (verbose) {
                char channel[48] = "the serial port";
                if (the_vm.vmm != CVM_VMM_QEMU)
                        snprintf(channel, sizeof(channel), "hybrid vsock");
                else if (the_vm.over_vsock)
                        snprintf(channel, sizeof(channel), "vsock CID %u", the_vm.vsock_cid);
                fprintf(stderr, "[cellvm: VM up in %.2f s (%s, %s pid %d, over %s)]\n",
                        mono_s() - t0, the_vm.kvm ? "KVM" : "TCG", cvm_vmm_name(the_vm.vmm),
                        (int)the_vm.pid, channel);
        }
        set_handler(SIGINT, on_sigint);
        return 0;
}

static int cmd_run(int argc, char **argv)
{
        struct vm_cmd v = {0};
        int first = parse_vm_options(&v, VM_RUN, argc, argv);
        if (first < 0)
                return EXIT_USAGE;
        if (first != argc - 1) {
                fputs("cellvm: run takes exactly one CODE argument after the options "
                      "('-' for stdin), e.g. cellvm run -- 'print(1)'\n",
                      stderr);
                return EXIT_USAGE;
        }
        char *code = NULL;
        if (strcmp(argv[first], "-") == 0 && !(code = read_all(stdin)))
                return read_all_failed ? EXIT_EXEC_ERROR : EXIT_USAGE;
        v.eo.code = code ? code : argv[first];
        struct cvc *c = NULL;
        int rc = boot_vm(&v, &c, v.verbose || isatty(STDERR_FILENO));
        if (rc < 0) {
                free(code);
                return EXIT_CONNECTION;
        }
        rc = run_cell(c, &v.eo, &v.out);
        cvc_close(c);
        cvm_kill(&the_vm);
        sbx_forget(&the_rec);
        free(code);
        return rc;
}

/* Is `line` (without its newline) the end of a cell? */
static bool ends_cell(const struct vm_cmd *v, const char *line)
{
        if (v->delim)
                return strcmp(line, v->delim) == 0;
        return line[0] == '\0' || strcmp(line, ";;") == 0;
}

/* `cellvm create --json`: a sandbox that outlives this command until its
 * deadline (the Python SDK's create() runs it), its entry printed as JSON. */
static int cmd_create(int argc, char **argv)
{
        struct vm_cmd v = {0};
        int first = parse_vm_options(&v, VM_CREATE, argc, argv);
        if (first < 0 || first != argc) {
                if (first >= 0)
                        fprintf(stderr,
                                "cellvm: create takes options only, not %s (cellvm --help)\n",
                                argv[first]);
                json_decref(v.metadata);
                json_decref(v.egress);
                return EXIT_USAGE;
        }
        int rc;
        char *metadata =
            v.metadata ? json_dumps(v.metadata, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        json_decref(v.metadata);
        if (v.metadata && !metadata) {
                fputs("cellvm: out of memory\n", stderr);
                return EXIT_CONNECTION;
        }
        /* E2B's Sandbox.create(snapshot_id): a kept snapshot's copy resumed. */
        struct ckept snapshot;
        if (sbx_find_snapshot(v.template_name, &snapshot)) {
                rc =
                    sbx_create_from_snapshot(&snapshot, metadata ? metadata : "{}", v.egress,
                                             v.pause_at_timeout, v.lifetime_s, v.pass_fd, v.holder);
                json_decref(v.egress);
                free(metadata);
                return rc;
        }
        if (v.egress && v.vm.vmm != CVM_VMM_QEMU) {
                fprintf(stderr,
                        "cellvm: --egress needs QEMU's egress port (docs/NETWORK.md), "
                        "not %s\n",
                        v.vmm);
                json_decref(v.egress);
                free(metadata);
                return EXIT_USAGE;
        }
        /* Any other name is only recorded (E2B's template names, the SDK's): said. */
        if (v.template_name)
                fprintf(
                    stderr,
                    "cellvm: create: --template %s is no kept snapshot (cellvm list-snapshots): "
                    "booting the image's own template, the name only recorded\n",
                    v.template_name);
        cvm_outlive_creator(true);
        v.pausable = true;
        struct cvc *c = NULL;
        rc = boot_vm(&v, &c, v.verbose);
        if (rc < 0) {
                json_decref(v.egress);
                free(metadata);
                return rc == -EAGAIN || rc == -EINVAL ? EXIT_USAGE : EXIT_CONNECTION;
        }
        /* Its rules beside the VM, and the process that enforces them. */
        if (v.egress) {
                char why[600];
                rc = cegress_rules_write(the_rec.e.dir, v.egress, why, sizeof(why));
                pid_t ek = rc < 0 ? rc : cegress_keeper_start(the_rec.e.key, the_rec.e.dir);
                json_decref(v.egress);
                if (rc < 0 || ek < 0) {
                        fprintf(stderr, "cellvm: --egress: %s\n", rc < 0 ? why : strerror(-ek));
                        cvc_close(c);
                        cvm_kill(&the_vm);
                        sbx_forget(&the_rec);
                        free(metadata);
                        return EXIT_CONNECTION;
                }
        }
        /* E2B's onTimeout "pause": the keeper pauses it at its deadline, and its
         * guest's own deadline leaves the time a pause takes (sbx_start_clock). */
        if (v.pause_at_timeout) {
                snprintf(the_rec.e.on_timeout, sizeof(the_rec.e.on_timeout), "pause");
                sbx_start_clock(&the_rec, c, &the_vm, v.lifetime_s);
        }
        /* The caller gets the connection itself (a new one over the serial
         * port would wait for the agent to reopen it), or connects anew. */
        if (v.pass_fd && (rc = cli_send_fd(v.pass_fd, cvc_fd(c))) < 0)
                fprintf(stderr, "cellvm: --pass-fd %d: %s (connect to the address instead)\n",
                        v.pass_fd, strerror(-rc));
        cvc_close(c);
        /* No process of ours stays with the VM: the keeper cleans up after it. */
        pid_t keeper = ckeeper_start(the_rec.e.key);
        if (keeper < 0)
                fprintf(stderr,
                        "cellvm: no keeper for %s (%s): the next cellvm process cleans up\n",
                        the_rec.e.key, strerror(-keeper));
        else
                the_rec.e.keeper_pid = keeper;
        sbx_hold(&the_rec, v.holder);
        sbx_describe(&the_rec, v.template_name, metadata);
        rc = sbx_print_json(&the_rec, v.report.restored ? &v.report : NULL);
        free(metadata);
        return rc;
}

/* `cellvm host-tsc [--measure]`: what TCG guests are told (host_tsc.h); the
 * tests compare it with the kernel's value and the guests' clocks. */
static int cmd_host_tsc(int argc, char **argv)
{
        if (argc == 2 && cli_is_help(argv[1])) {
                fputs("usage: cellvm host-tsc [--measure]\n"
                      "Prints this host's TSC frequency in kHz as TCG guests are told: the cached\n"
                      "value, or (--measure) measured now.\n",
                      stdout);
                return 0;
        }
        bool measure = argc == 2 && strcmp(argv[1], "--measure") == 0;
        if (argc != 1 && !measure) {
                fprintf(stderr, "cellvm: host-tsc: unexpected %s (usage: host-tsc [--measure])\n",
                        argv[1]);
                return EXIT_USAGE;
        }
        uint64_t khz;
        int rc = measure ? cvm_host_tsc_measure(&khz) : cvm_host_tsc_khz(&khz);
        if (rc < 0) {
                fprintf(stderr, "cellvm: host-tsc: %s\n",
                        rc == -ENOTSUP  ? "no TSC to read on this host"
                        : rc == -EINVAL ? "bad $CELLVM_TSC_KHZ"
                                        : strerror(-rc));
                return EXIT_CONNECTION;
        }
        printf("%llu\n", (unsigned long long)khz);
        return 0;
}

static int cmd_shell(int argc, char **argv)
{
        struct vm_cmd v = {0};
        int first = parse_vm_options(&v, VM_SHELL, argc, argv);
        if (first < 0)
                return EXIT_USAGE;
        if (first != argc) {
                fputs("cellvm: shell takes no operands: cells come from stdin\n", stderr);
                return EXIT_USAGE;
        }
        bool tty = isatty(STDIN_FILENO);
        struct cvc *c = NULL;
        if (boot_vm(&v, &c, true) < 0)
                return EXIT_CONNECTION;
        if (tty)
                fprintf(stderr, "[cells end at %s; Ctrl-D quits]\n",
                        v.delim ? "your --delim line" : "a blank line or ';;'");
        char *line = NULL, *cell = NULL;
        size_t cap = 0, cell_len = 0, cell_cap = 0;
        int status = 0;
        bool eof = false;
        unsigned long n = 1;
        while (!eof && status != EXIT_CONNECTION) {
                if (tty) {
                        fprintf(stdout, cell_len ? "   ...: " : "In [%lu]: ", n);
                        fflush(stdout);
                }
                errno = 0;
                ssize_t len = getline(&line, &cap, stdin);
                if (len < 0 && errno == EINTR && interrupted) { /* Ctrl-C at the prompt */
                        clearerr(stdin);
                        interrupted = 0;
                        cell_len = 0;
                        fputs("\nKeyboardInterrupt\n", stdout);
                        continue;
                }
                if (len < 0) {
                        if (ferror(stdin))
                                fprintf(stderr, "cellvm: reading stdin: %s\n", strerror(errno));
                        eof = true;
                } else if ((size_t)len > MAX_LINE || cell_len + (size_t)len > MAX_CODE) {
                        fputs("cellvm: cell too large; dropped\n", stderr);
                        cell_len = 0;
                        continue;
                } else {
                        if (line[len - 1] == '\n')
                                line[--len] = '\0';
                        if (!ends_cell(&v, line)) {
                                if (cell_len + (size_t)len + 2 > cell_cap) {
                                        size_t ncap = (cell_len + (size_t)len + 2) * 2;
                                        char *nc = realloc(cell, ncap);
                                        if (!nc) {
                                                fputs("cellvm: out of memory\n", stderr);
                                                status = EXIT_CONNECTION;
                                                break;
                                        }
                                        cell = nc, cell_cap = ncap;
                                }
                                memcpy(cell + cell_len, line, (size_t)len);
                                cell_len += (size_t)len;
                                cell[cell_len++] = '\n';
                                cell[cell_len] = '\0';
                                continue;
                        }
                }
                if (cell_len == 0)
                        continue;
                v.eo.code = cell;
                interrupted = 0;
                int rc = run_cell(c, &v.eo, &v.out);
                interrupted = 0;
                cell_len = 0;
                n++;
                if (rc == EXIT_CONNECTION)
                        status = rc;
        }
        free(line);
        free(cell);
        cvc_close(c);
        cvm_kill(&the_vm);
        sbx_forget(&the_rec);
        if (tty)
                fputc('\n', stdout);
        return status;
}

static int cmd_snapshot(int argc, char **argv)
{
        if (argc < 2 || cli_is_help(argv[1])) {
                fputs(snapshot_usage, argc < 2 ? stderr : stdout);
                return argc < 2 ? EXIT_USAGE : 0;
        }
        const char *sub = argv[1];
        if (strcmp(sub, "list") == 0) {
                if (argc != 2) {
                        fputs("cellvm: snapshot list takes no arguments\n", stderr);
                        return EXIT_USAGE;
                }
                return snap_cmd_list();
        }
        if (strcmp(sub, "remove") == 0)
                return snap_cmd_remove(argc - 2, argv + 2);
        bool create = strcmp(sub, "create") == 0, check = strcmp(sub, "check") == 0;
        if (!create && !check && strcmp(sub, "manifest") != 0) {
                fprintf(stderr,
                        "cellvm: unknown snapshot command '%s' (see cellvm snapshot --help)\n",
                        sub);
                return EXIT_USAGE;
        }
        struct vm_cmd v = {0};
        int first = parse_vm_options(&v, VM_SNAPSHOT, argc - 1, argv + 1);
        if (first < 0)
                return EXIT_USAGE;
        if (first != argc - 1 || (v.force && !create)) {
                fprintf(stderr, "cellvm: snapshot %s takes VM options only%s\n", sub,
                        create ? " and --force" : "");
                return EXIT_USAGE;
        }
        if (check)
                return snap_cmd_check(&v.vm, v.user_mb);
        if (!create)
                return snap_cmd_manifest(&v.vm, v.user_mb);
        set_handler(SIGTERM, on_fatal_signal);
        set_handler(SIGHUP, on_fatal_signal);
        set_handler(SIGQUIT, on_fatal_signal);
        set_handler(SIGINT, on_fatal_signal);
        return snap_cmd_create(&v.vm, v.user_mb, v.force, " (use --force to build it again)",
                               &the_vm);
}

/* The registry's limits from the environment: a bad value is an error, as a
 * bad $CELLVM_DEFAULT_TIMEOUT is, rather than a silent default. */
static int check_env_limits(void)
{
        static const struct {
                const char *name;
                bool whole, positive;
        } vars[] = {{"CELLVM_MAX_SANDBOXES", true, true},
                    {"CELLVM_MAX_TIMEOUT", false, true},
                    {"CELLVM_DEADLINE_GRACE", false, false}};
        for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) {
                const char *s = getenv(vars[k].name);
                if (!s || !*s)
                        continue;
                char *end;
                errno = 0;
                double v = strtod(s, &end);
                bool ok = !*end && !errno && v >= 0 && (!vars[k].positive || v > 0) &&
                          (!vars[k].whole || strspn(s, "0123456789") == strlen(s));
                if (!ok) {
                        fprintf(stderr, "cellvm: $%s takes %s, not '%s'\n", vars[k].name,
                                vars[k].whole      ? "a whole number > 0"
                                : vars[k].positive ? "seconds > 0"
                                                   : "seconds >= 0",
                                s);
                        return -EINVAL;
                }
        }
        return 0;
}

int main(int argc, char **argv)
{
        const char *addr = getenv("CELLVM_ADDR");
        int i = 1;
        for (; i < argc && argv[i][0] == '-'; i++) {
                if (cli_is_help(argv[i])) {
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
        if (!(argc - i == 2 && cli_is_help(argv[i + 1])) && check_env_limits() < 0)
                return EXIT_USAGE;
        if (strcmp(argv[i], "run") == 0)
                return cmd_run(argc - i, argv + i);
        if (strcmp(argv[i], "shell") == 0)
                return cmd_shell(argc - i, argv + i);
        if (strcmp(argv[i], "create") == 0)
                return cmd_create(argc - i, argv + i);
        if (strcmp(argv[i], "keep") == 0) {
                /* Plumbing: the keeper of an entry (create starts its own; the tests
                 * start one for a stand-in VMM's entry). */
                if (argc - i == 2 && cli_is_help(argv[i + 1])) {
                        fputs("usage: cellvm keep KEY\n"
                              "(plumbing) forks the keeper of live sandbox KEY (its registry key, "
                              "as\ncellvm ps shows) and prints the keeper's pid.\n",
                              stdout);
                        return 0;
                }
                if (argc - i != 2 || argv[i + 1][0] == '-') {
                        fprintf(stderr, "cellvm: keep: %s (usage: keep KEY)\n",
                                argc - i != 2 ? "takes one KEY" : "unknown option");
                        return EXIT_USAGE;
                }
                struct creg_entry e;
                static char metadata[64 * 1024];
                int found = sbx_find(argv[i + 1], &e, metadata, sizeof(metadata));
                if (found < 0 || strcmp(e.key, argv[i + 1]) != 0) {
                        fprintf(stderr, "cellvm: keep %s: %s\n", argv[i + 1],
                                found < 0 && found != -ENOENT ? strerror(-found)
                                                              : "no live sandbox has that key");
                        return found < 0 && found != -ENOENT ? EXIT_CONNECTION : EXIT_EXEC_ERROR;
                }
                pid_t keeper = ckeeper_start(argv[i + 1]);
                if (keeper < 0) {
                        fprintf(stderr, "cellvm: keep %s: %s\n", argv[i + 1], strerror(-keeper));
                        return EXIT_CONNECTION;
                }
                printf("%d\n", (int)keeper);
                return 0;
        }
        if (strcmp(argv[i], "hold") == 0)
                return cmd_hold(argc - i, argv + i);
        if (strcmp(argv[i], "egress") == 0)
                return cmd_egress(argc - i, argv + i);
        if (strcmp(argv[i], "egress-keep") == 0)
                return cmd_egress_keep(argc - i, argv + i);
        if (strcmp(argv[i], "host-tsc") == 0)
                return cmd_host_tsc(argc - i, argv + i);
        if (strcmp(argv[i], "set-timeout") == 0)
                return cmd_set_timeout(argc - i, argv + i);
        if (strcmp(argv[i], "ps") == 0)
                return cmd_ps(argc - i, argv + i);
        if (strcmp(argv[i], "kill") == 0)
                return cmd_kill(argc - i, argv + i);
        if (strcmp(argv[i], "pause") == 0)
                return cmd_pause(argc - i, argv + i);
        if (strcmp(argv[i], "resume") == 0)
                return cmd_resume(argc - i, argv + i);
        if (strcmp(argv[i], "fork") == 0)
                return cmd_fork(argc - i, argv + i);
        if (strcmp(argv[i], "create-snapshot") == 0)
                return cmd_create_snapshot(argc - i, argv + i);
        if (strcmp(argv[i], "list-snapshots") == 0)
                return cmd_list_snapshots(argc - i, argv + i);
        if (strcmp(argv[i], "delete-snapshot") == 0)
                return cmd_delete_snapshot(argc - i, argv + i);
        if (strcmp(argv[i], "snapshot") == 0)
                return cmd_snapshot(argc - i, argv + i);
        if (strcmp(argv[i], "serve") == 0)
                return cmd_serve(argc - i, argv + i);
        if (strcmp(argv[i], "kube") == 0)
                return cmd_kube(argc - i, argv + i);
        if (strcmp(argv[i], "mcp") == 0)
                return cmd_mcp(argc - i, argv + i);
        const struct agent_cmd *ac = find_agent_cmd(argv[i]);
        if (!ac) {
                fprintf(stderr, "cellvm: unknown command '%s' (see cellvm --help)\n", argv[i]);
                return EXIT_USAGE;
        }
        int pre = check_agent_args(ac, argc - i, argv + i);
        if (pre >= 0)
                return pre;
        if (!addr) {
                fputs("cellvm: no agent address: pass --connect ADDR or set CELLVM_ADDR\n", stderr);
                return EXIT_USAGE;
        }
        sbx_sweep();
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
