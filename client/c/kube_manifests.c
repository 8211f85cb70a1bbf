/* `cellvm kube manifests`: the Kubernetes objects that run cellvm as the
 * runtime of agent-sandbox (docs/KUBERNETES.md), as one multi-document YAML
 * stream on stdout: the SandboxTemplate of the pod image (`cellvm serve
 * --single`) and its SandboxWarmPool, then the control plane (`cellvm serve
 * --backend agent-sandbox`): ServiceAccount, Role, RoleBinding, Deployment,
 * Service. Every value written is either a constant or an option checked
 * against a strict character set here, so nothing needs YAML escaping. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_help.h"

#define KUBE_PORT 3000
/* What QEMU and `cellvm serve` take beside the guest's RAM. */
#define KUBE_VMM_OVERHEAD_MB 256

static const char kube_usage[] =
    "usage: cellvm kube manifests --image REF [--namespace NS] [--replicas N]\n"
    "                             [--control-plane-replicas N] [--kvm | --no-kvm]\n"
    "                             [--memory MB] [--vcpus N] [--template-host-path PATH]\n"
    "                             [--api-key-secret NAME]\n"
    "\n"
    "Prints the Kubernetes objects that run cellvm as the runtime of agent-sandbox\n"
    "(kubernetes-sigs/agent-sandbox, v1beta1) as one YAML stream, for kubectl apply -f -:\n"
    "  SandboxTemplate cellvm   pods of the image REF (make oci): `cellvm serve --single`,\n"
    "                           one sandbox each, ready (GET /health) once restored and warm\n"
    "  SandboxWarmPool cellvm   N such pods kept ready; a SandboxClaim takes one\n"
    "  ServiceAccount, Role, RoleBinding, Deployment and Service cellvm-control-plane:\n"
    "                           `cellvm serve --backend agent-sandbox --namespace NS`, E2B's\n"
    "                           API for the cluster (cellvm serve --help)\n"
    "\n"
    "  --image REF                 the pod image, also the control plane's (required)\n"
    "  --namespace NS              where everything goes (default cellvm)\n"
    "  --replicas N                warm pool size, 0 to 10000 (default 2)\n"
    "  --control-plane-replicas N  1 to 100 (default 2; it keeps no state of its own)\n"
    "  --kvm                       request /dev/kvm from KubeVirt's device plugin\n"
    "                              (devices.kubevirt.io/kvm: 1) and refuse TCG (default)\n"
    "  --no-kvm                    no device request: QEMU emulates (TCG), ~10x slower\n"
    "  --memory MB                 each sandbox's RAM (default 1024); the pod asks for\n"
    "                              256 MiB more, for QEMU and the server\n"
    "  --vcpus N                   each sandbox's CPUs (default 1), the pod's CPU request\n"
    "  --template-host-path PATH   a node directory where the pods of a node share the\n"
    "                              template (default /var/lib/cellvm/templates); \"\" for\n"
    "                              none: each pod builds its own at start (about 15-50 s\n"
    "                              under TCG, depending on load)\n"
    "  --api-key-secret NAME       the Secret whose key `api-key` is E2B's API key\n"
    "                              (default cellvm-api-key; create it yourself)\n";

struct kube_opts {
        const char *image, *ns, *host_path, *secret;
        unsigned replicas, cp_replicas, memory_mb, vcpus;
        bool kvm;
};

/* A DNS-1123 label: [a-z0-9-], 1 to 63, alphanumeric at both ends. */
static bool dns_label(const char *s)
{
        size_t n = strlen(s);
        return n >= 1 && n <= 63 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n &&
               s[0] != '-' && s[n - 1] != '-';
}

/* An image reference: registry/name:tag@digest characters only. */
static bool image_ref(const char *s)
{
        size_t n = strlen(s);
        return n >= 1 && n <= 255 &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789./:@_-") ==
                   n;
}

/* An absolute path of plain characters. */
static bool host_path(const char *s)
{
        size_t n = strlen(s);
        return n == 0 ||
               (n <= 255 && s[0] == '/' &&
                strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") ==
                    n);
}

static int parse_uint(const char *what, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (!s[0] || *end || s[0] == '-' || v < lo || v > hi) {
                fprintf(stderr, "cellvm kube manifests: %s takes %u to %u\n", what, lo, hi);
                return -1;
        }
        *out = (unsigned)v;
        return 0;
}

static void labels(const char *indent, const char *component)
{
        printf("%sapp.kubernetes.io/name: cellvm\n"
               "%sapp.kubernetes.io/component: %s\n"
               "%sapp.kubernetes.io/part-of: cellvm\n",
               indent, indent, component, indent);
}

/* What both containers serve: E2B's API on the port, with the API key. */
static void print_port_and_key(const struct kube_opts *o)
{
        printf("          ports:\n"
               "            - name: e2b\n"
               "              containerPort: %d\n"
               "              protocol: TCP\n"
               "          env:\n"
               "            - name: CELLVM_API_KEY\n"
               "              valueFrom:\n"
               "                secretKeyRef:\n"
               "                  name: %s\n"
               "                  key: api-key\n",
               KUBE_PORT, o->secret);
}

/* Ready: GET /health says 200. Alive: the server listens (its /health is
 * 503 while it starts, which must not restart it). */
static void print_probes(unsigned ready_period_s)
{
        printf("          readinessProbe:\n"
               "            httpGet:\n"
               "              path: /health\n"
               "              port: %d\n"
               "            periodSeconds: %u\n"
               "          livenessProbe:\n"
               "            tcpSocket:\n"
               "              port: %d\n"
               "            periodSeconds: 10\n",
               KUBE_PORT, ready_period_s, KUBE_PORT);
}

static void print_template(const struct kube_opts *o)
{
        printf("apiVersion: extensions.agents.x-k8s.io/v1beta1\n"
               "kind: SandboxTemplate\n"
               "metadata:\n"
               "  name: cellvm\n"
               "  namespace: %s\n"
               "  labels:\n",
               o->ns);
        labels("    ", "sandbox");
        printf("spec:\n"
               "  # A headless Service per sandbox: agent-sandbox's router reaches the pod\n"
               "  # at <sandbox>.<namespace>.svc.cluster.local.\n"
               "  service: true\n"
               "  networkPolicyManagement: Managed\n"
               "  networkPolicy:\n"
               "    # Only the control plane (and pods given its labels, e.g. the router)\n"
               "    # reach a sandbox; the pod itself needs no egress (the VM has no network).\n"
               "    ingress:\n"
               "      - from:\n"
               "          - podSelector:\n"
               "              matchLabels:\n"
               "                app.kubernetes.io/part-of: cellvm\n"
               "                app.kubernetes.io/component: control-plane\n"
               "        ports:\n"
               "          - protocol: TCP\n"
               "            port: %d\n"
               "    egress: []\n"
               "  podTemplate:\n"
               "    metadata:\n"
               "      labels:\n",
               KUBE_PORT);
        labels("        ", "sandbox");
        printf("    spec:\n"
               "      automountServiceAccountToken: false\n"
               "      enableServiceLinks: false\n"
               "      restartPolicy: OnFailure\n"
               "      terminationGracePeriodSeconds: 10\n"
               "      containers:\n"
               "        - name: cellvm\n"
               "          image: \"%s\"\n"
               "          # The image's entrypoint: cellvm serve --single --listen 0.0.0.0:%d\n"
               "          args: [\"--memory\", \"%u\", \"--vcpus\", \"%u\"]\n",
               o->image, KUBE_PORT, o->memory_mb, o->vcpus);
        print_port_and_key(o);
        printf("            - name: CELLVM_ACCEL\n"
               "              value: \"%s\"\n"
               "          # Ready once the sandbox is restored and warm (a cell ran); 503\n"
               "          # again once it ended.\n",
               o->kvm ? "kvm" : "tcg");
        print_probes(1);
        printf("          resources:\n"
               "            requests:\n"
               "              cpu: \"%u\"\n"
               "              memory: \"%uMi\"\n",
               o->vcpus, o->memory_mb + KUBE_VMM_OVERHEAD_MB);
        if (o->kvm)
                printf("              devices.kubevirt.io/kvm: \"1\"\n");
        printf("            limits:\n"
               "              memory: \"%uMi\"\n",
               o->memory_mb + KUBE_VMM_OVERHEAD_MB);
        if (o->kvm)
                printf("              devices.kubevirt.io/kvm: \"1\"\n");
        printf("          securityContext:\n"
               "            allowPrivilegeEscalation: false\n"
               "            capabilities:\n"
               "              drop: [\"ALL\"]\n");
        if (o->host_path[0])
                printf("          volumeMounts:\n"
                       "            - name: templates\n"
                       "              mountPath: /var/lib/cellvm/templates\n"
                       "      volumes:\n"
                       "        # The template, built by the node's first pod and restored\n"
                       "        # by the others (rebuilt beside it when it does not fit).\n"
                       "        - name: templates\n"
                       "          hostPath:\n"
                       "            path: \"%s\"\n"
                       "            type: DirectoryOrCreate\n",
                       o->host_path);
}

static void print_warm_pool(const struct kube_opts *o)
{
        printf("---\n"
               "apiVersion: extensions.agents.x-k8s.io/v1beta1\n"
               "kind: SandboxWarmPool\n"
               "metadata:\n"
               "  name: cellvm\n"
               "  namespace: %s\n"
               "  labels:\n",
               o->ns);
        labels("    ", "sandbox");
        printf("spec:\n"
               "  replicas: %u\n"
               "  sandboxTemplateRef:\n"
               "    name: cellvm\n",
               o->replicas);
}

static void print_meta(const char *kind, const char *api, const struct kube_opts *o)
{
        printf("---\n"
               "apiVersion: %s\n"
               "kind: %s\n"
               "metadata:\n"
               "  name: cellvm-control-plane\n"
               "  namespace: %s\n"
               "  labels:\n",
               api, kind, o->ns);
        labels("    ", "control-plane");
}

static void print_control_plane(const struct kube_opts *o)
{
        print_meta("ServiceAccount", "v1", o);
        print_meta("Role", "rbac.authorization.k8s.io/v1", o);
        printf("rules:\n"
               "  - apiGroups: [\"extensions.agents.x-k8s.io\"]\n"
               "    resources: [\"sandboxclaims\"]\n"
               /* patch: the pod's sandbox id and the deadline (serve_kube.c) */
               "    verbs: [\"get\", \"list\", \"watch\", \"create\", \"patch\", "
               "\"delete\"]\n"
               "  - apiGroups: [\"agents.x-k8s.io\"]\n"
               "    resources: [\"sandboxes\"]\n"
               "    verbs: [\"get\", \"list\", \"watch\", \"create\", \"delete\"]\n");
        print_meta("RoleBinding", "rbac.authorization.k8s.io/v1", o);
        printf("roleRef:\n"
               "  apiGroup: rbac.authorization.k8s.io\n"
               "  kind: Role\n"
               "  name: cellvm-control-plane\n"
               "subjects:\n"
               "  - kind: ServiceAccount\n"
               "    name: cellvm-control-plane\n"
               "    namespace: %s\n",
               o->ns);
        print_meta("Deployment", "apps/v1", o);
        printf("spec:\n"
               "  replicas: %u\n"
               "  selector:\n"
               "    matchLabels:\n"
               "      app.kubernetes.io/part-of: cellvm\n"
               "      app.kubernetes.io/component: control-plane\n"
               "  template:\n"
               "    metadata:\n"
               "      labels:\n",
               o->cp_replicas);
        labels("        ", "control-plane");
        printf("    spec:\n"
               "      serviceAccountName: cellvm-control-plane\n"
               "      containers:\n"
               "        - name: cellvm\n"
               "          image: \"%s\"\n"
               "          command: [\"/usr/local/bin/cellvm\"]\n"
               "          args: [\"serve\", \"--backend\", \"agent-sandbox\", \"--namespace\", "
               "\"%s\",\n"
               "                 \"--listen\", \"0.0.0.0:%d\"]\n",
               o->image, o->ns, KUBE_PORT);
        print_port_and_key(o);
        print_probes(2);
        printf("          resources:\n"
               "            requests:\n"
               "              cpu: 100m\n"
               "              memory: 64Mi\n"
               "            limits:\n"
               "              memory: 256Mi\n"
               "          securityContext:\n"
               "            runAsNonRoot: true\n"
               "            runAsUser: 65534\n"
               "            allowPrivilegeEscalation: false\n"
               "            readOnlyRootFilesystem: true\n"
               "            capabilities:\n"
               "              drop: [\"ALL\"]\n"
               "          volumeMounts:\n"
               "            - name: tmp\n"
               "              mountPath: /tmp\n"
               "      volumes:\n"
               "        - name: tmp\n"
               "          emptyDir: {}\n");
        print_meta("Service", "v1", o);
        printf("spec:\n"
               "  type: ClusterIP\n"
               "  selector:\n"
               "    app.kubernetes.io/part-of: cellvm\n"
               "    app.kubernetes.io/component: control-plane\n"
               "  ports:\n"
               "    - name: e2b\n"
               "      port: %d\n"
               "      targetPort: e2b\n"
               "      protocol: TCP\n",
               KUBE_PORT);
}

static int cmd_manifests(int argc, char **argv)
{
        static const struct option opts[] = {
            {"image", required_argument, NULL, 'i'},
            {"namespace", required_argument, NULL, 'n'},
            {"replicas", required_argument, NULL, 'r'},
            {"control-plane-replicas", required_argument, NULL, 'c'},
            {"kvm", no_argument, NULL, 'k'},
            {"no-kvm", no_argument, NULL, 'K'},
            {"memory", required_argument, NULL, 'm'},
            {"vcpus", required_argument, NULL, 'v'},
            {"template-host-path", required_argument, NULL, 't'},
            {"api-key-secret", required_argument, NULL, 's'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        struct kube_opts o = {.ns = "cellvm",
                              .host_path = "/var/lib/cellvm/templates",
                              .secret = "cellvm-api-key",
                              .replicas = 2,
                              .cp_replicas = 2,
                              .memory_mb = 1024,
                              .vcpus = 1,
                              .kvm = true};
        int opt;
        bool kvm_given = false;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                int bad = 0;
                switch (opt) {
                case 'i':
                        o.image = optarg;
                        bad = !image_ref(optarg);
                        break;
                case 'n':
                        o.ns = optarg;
                        bad = !dns_label(optarg);
                        break;
                case 's':
                        o.secret = optarg;
                        bad = !dns_label(optarg);
                        break;
                case 't':
                        o.host_path = optarg;
                        bad = !host_path(optarg);
                        break;
                case 'r':
                        bad = parse_uint("--replicas", optarg, 0, 10000, &o.replicas) < 0;
                        break;
                case 'c':
                        bad = parse_uint("--control-plane-replicas", optarg, 1, 100,
                                         &o.cp_replicas) < 0;
                        break;
                case 'm':
                        bad = parse_uint("--memory", optarg, 128, 1u << 20, &o.memory_mb) < 0;
                        break;
                case 'v':
                        bad = parse_uint("--vcpus", optarg, 1, 256, &o.vcpus) < 0;
                        break;
                case 'k':
                case 'K':
                        if (kvm_given && o.kvm != (opt == 'k')) {
                                fputs("cellvm kube manifests: --kvm and --no-kvm exclude each "
                                      "other\n",
                                      stderr);
                                return 2;
                        }
                        o.kvm = opt == 'k';
                        kvm_given = true;
                        break;
                case 'h':
                        fputs(kube_usage, stdout);
                        return 0;
                default:
                        fputs(kube_usage, stderr);
                        return 2;
                }
                if (bad && strchr("inst", opt)) {
                        fprintf(stderr,
                                "cellvm kube manifests: '%s': not a valid value (names are DNS "
                                "labels, the image a plain reference, the path absolute)\n",
                                optarg);
                        return 2;
                }
                if (bad)
                        return 2;
        }
        if (optind != argc || !o.image) {
                fputs(optind != argc ? "cellvm kube manifests: unexpected argument\n"
                                     : "cellvm kube manifests: --image REF is required\n",
                      stderr);
                fputs(kube_usage, stderr);
                return 2;
        }
        print_template(&o);
        print_warm_pool(&o);
        print_control_plane(&o);
        return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

int cmd_kube(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "manifests") == 0)
                return cmd_manifests(argc - 1, argv + 1);
        if (argc >= 2 && cli_is_help(argv[1])) {
                fputs(kube_usage, stdout);
                return 0;
        }
        fputs(kube_usage, stderr);
        return 2;
}
