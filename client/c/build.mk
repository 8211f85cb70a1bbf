# client/c: libcellvm (host-side C client) and the `cellvm` CLI.
CLIENT_LIB_SRCS := client/c/connect.c client/c/client.c client/c/event.c client/c/files.c \
                   client/c/print_json.c client/c/vmm.c client/c/vmm_boot.c \
                   client/c/vmm_vsock.c client/c/registry.c client/c/host_tsc.c \
                   client/c/manifest.c client/c/template.c client/c/qmp.c \
                   client/c/snapshot_qemu.c client/c/vmm_idle.c client/c/paused.c \
                   client/c/user_dirs.c client/c/tsc_word.c client/c/pause.c \
                   client/c/hybrid_vsock.c client/c/vmm_hybrid.c \
                   client/c/vmm_firecracker.c client/c/vmm_cloud_hypervisor.c \
                   client/c/vmm_api.c client/c/snapshot_hybrid.c client/c/pause_hybrid.c \
                   client/c/pause_fs.c client/c/fs_snapshot.c
# Egress by policy (docs/NETWORK.md): the rules, the guest's proxy requests, names.
CLIENT_LIB_SRCS += client/c/egress_policy.c client/c/egress_request.c client/c/egress_resolve.c
CLIENT_LIB_OBJS := $(CLIENT_LIB_SRCS:%.c=$(B)/%.o)
CLIENT_LIB      := $(B)/libcellvm.a
CFLAGS_client_c_ := -Iclient/c

$(CLIENT_LIB): $(CLIENT_LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# cellvm serve (docs/SERVE.md): E2B's protocols over libmicrohttpd and jansson;
# nettle for SHA-256 (signed file URLs), zlib for gzip'ed uploads.
SERVE_SRCS := client/c/serve_main.c client/c/serve_http.c client/c/serve_api.c \
              client/c/serve_interp.c client/c/serve_envd.c client/c/serve_envd_words.c \
              client/c/serve_files.c \
              client/c/serve_sandbox.c client/c/serve_mux.c client/c/serve_stream.c \
              client/c/serve_key.c client/c/serve_sign.c client/c/serve_connect.c \
              client/c/serve_multipart.c client/c/serve_fs.c client/c/serve_process.c client/c/serve_watch.c client/c/serve_pool.c client/c/serve_meta.c \
              client/c/serve_metrics.c \
              client/c/serve_pause.c client/c/serve_snapshots.c
# getHost(port): other ports relayed through the agent's tunnels.
SERVE_SRCS += client/c/serve_port.c client/c/serve_http1.c client/c/serve_upgrade.c \
              client/c/serve_relay.c
# The guest's egress streams (EGRESS_ACCEPT), decided and relayed.
SERVE_SRCS += client/c/serve_egress.c
# --backend agent-sandbox: the Kubernetes API and the pods over libcurl,
# kubeconfigs read with libyaml.
SERVE_SRCS += client/c/serve_kube.c client/c/kube_api.c
SERVE_OBJS := $(SERVE_SRCS:%.c=$(B)/%.o)
SERVE_LIBS := -lmicrohttpd -ljansson -lnettle -lz -lpthread -lcurl -lyaml

# cellvm mcp (docs/MCP.md): stdio, and /mcp of cellvm serve; in the same binary.
MCP_SRCS := client/c/mcp_rpc.c client/c/mcp_tools.c client/c/mcp_run_code.c \
            client/c/mcp_content.c client/c/mcp_session.c client/c/mcp_stdio.c \
            client/c/mcp_http.c
SERVE_OBJS += $(MCP_SRCS:%.c=$(B)/%.o)

$(B)/cellvm: $(B)/client/c/cli.o $(B)/client/c/cli_sandboxes.o $(B)/client/c/cli_snapshot.o \
		$(B)/client/c/kube_manifests.o $(B)/client/c/serve_single.o \
		$(B)/client/c/cli_pause.o $(B)/client/c/cli_fork.o $(B)/client/c/keeper.o $(B)/client/c/pass_fd.o \
		$(B)/client/c/kept_snapshots.o $(B)/client/c/cli_snapshots.o \
		$(B)/client/c/cli_egress.o $(B)/client/c/egress_keeper.o \
		$(SERVE_OBJS) $(CLIENT_LIB) $(PROTO_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ -lcbor -lm $(SERVE_LIBS)

# C unit tests of the CLI's VM helpers (tests/c/test_client_vmm.c): `make check-c`.
CLIENT_TESTS := $(B)/tests/c/test_client_vmm $(B)/tests/c/test_client_registry \
                $(B)/tests/c/test_client_host_tsc $(B)/tests/c/test_client_manifest \
                $(B)/tests/c/test_client_qmp $(B)/tests/c/test_client_vmm_idle \
                $(B)/tests/c/test_client_hybrid_vsock

$(B)/tests/c/test_client_hybrid_vsock: $(B)/tests/c/test_client_hybrid_vsock.o \
		$(B)/client/c/hybrid_vsock.o $(B)/client/c/connect.o
	$(CC) $(LDFLAGS) -o $@ $^

# cellvm serve's reading of a sandbox's own HTTP responses (serve_http1.c).
CLIENT_TESTS += $(B)/tests/c/test_serve_http1

# Egress rules, the guest's proxy requests and ClientHellos, the hosts file.
CLIENT_TESTS += $(B)/tests/c/test_egress

# A filesystem-only pause's guest side against a scripted agent (fs_snapshot.c).
CLIENT_TESTS += $(B)/tests/c/test_client_fs_snapshot

$(B)/tests/c/test_client_fs_snapshot: $(B)/tests/c/test_client_fs_snapshot.o $(CLIENT_LIB) \
		$(PROTO_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ -lcbor

$(B)/tests/c/test_egress: $(B)/tests/c/test_egress.o $(B)/client/c/egress_policy.o \
		$(B)/client/c/egress_request.o $(B)/client/c/egress_resolve.o $(PROTO_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ -lcbor

$(B)/tests/c/test_serve_http1: $(B)/tests/c/test_serve_http1.o $(B)/client/c/serve_http1.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_client_manifest: $(B)/tests/c/test_client_manifest.o \
		$(B)/client/c/manifest.o $(B)/client/c/template.o $(B)/client/c/user_dirs.o \
		$(B)/client/c/tsc_word.o $(PROTO_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTO_LIBS)

$(B)/tests/c/test_client_vmm_idle: $(B)/tests/c/test_client_vmm_idle.o $(B)/client/c/vmm_idle.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_client_qmp: $(B)/tests/c/test_client_qmp.o $(B)/client/c/qmp.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_client_host_tsc: $(B)/tests/c/test_client_host_tsc.o $(B)/client/c/host_tsc.o \
		$(B)/client/c/registry.o $(B)/client/c/user_dirs.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_client_registry: $(B)/tests/c/test_client_registry.o $(B)/client/c/registry.o \
		$(B)/client/c/user_dirs.o
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/c/test_client_vmm: $(B)/tests/c/test_client_vmm.o $(B)/client/c/vmm_boot.o \
		$(B)/client/c/vmm_vsock.o $(B)/client/c/connect.o
	$(CC) $(LDFLAGS) -o $@ $^

.PHONY: check-c-client
check-c-client: $(CLIENT_TESTS)
	@set -e; for t in $(CLIENT_TESTS); do echo "== $$t"; $$t; done

check-c: check-c-client
