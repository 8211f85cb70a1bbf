# fuzz/: libFuzzer targets for every decoder of untrusted bytes. Built with
# clang into build/fuzz (own objects: libFuzzer needs coverage instrumentation).
FUZZ_CC     ?= clang
FUZZ_DIR    := build/fuzz
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Iprotocol -Iclient/c \
               -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_PROTO  := $(PROTO_SRCS)
FUZZ_TARGETS := $(FUZZ_DIR)/fuzz_agent_decoder $(FUZZ_DIR)/fuzz_client_decoder \
                $(FUZZ_DIR)/fuzz_serve_request $(FUZZ_DIR)/fuzz_guest_http \
                $(FUZZ_DIR)/fuzz_mcp_message $(FUZZ_DIR)/fuzz_egress_request

$(FUZZ_DIR)/fuzz_agent_decoder: fuzz/fuzz_agent_decoder.c $(FUZZ_PROTO)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $^ -lcbor

$(FUZZ_DIR)/fuzz_client_decoder: fuzz/fuzz_client_decoder.c client/c/event.c $(FUZZ_PROTO)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $^ -lcbor

# cellvm serve's request side: the multipart reader, Connect framing, the Basic
# user header, base64, signed URLs and query times (the sandbox table and routes
# stubbed in the target; no zlib: serve_files.c is not linked).
FUZZ_SERVE := client/c/serve_http.c client/c/serve_connect.c client/c/serve_multipart.c \
              client/c/serve_sign.c

$(FUZZ_DIR)/fuzz_serve_request: fuzz/fuzz_serve_request.c $(FUZZ_SERVE) $(FUZZ_PROTO) client/c/serve.h \
		client/c/serve_http.h client/c/serve_connect.h client/c/serve_multipart.h \
		client/c/serve_sign.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -lmicrohttpd -ljansson -lnettle -lcbor

# A sandbox's own HTTP server's responses as serve relays them (serve_http1.c).
$(FUZZ_DIR)/fuzz_guest_http: fuzz/fuzz_guest_http.c client/c/serve_http1.c client/c/serve_http1.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

# cellvm mcp's JSON-RPC and tool arguments (no sandbox: serve_create and the
# agent connection stubbed in the target), and its bounded tool text.
FUZZ_MCP := client/c/mcp_rpc.c client/c/mcp_tools.c client/c/mcp_run_code.c \
            client/c/mcp_content.c client/c/mcp_session.c client/c/serve_http.c

$(FUZZ_DIR)/fuzz_mcp_message: fuzz/fuzz_mcp_message.c $(FUZZ_MCP) $(FUZZ_PROTO) client/c/mcp.h \
		client/c/mcp_content.h client/c/serve.h client/c/serve_http.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -lmicrohttpd -ljansson -lcbor

# The guest's egress proxy requests and ClientHellos (egress_request.c).
$(FUZZ_DIR)/fuzz_egress_request: fuzz/fuzz_egress_request.c client/c/egress_request.c \
		client/c/egress_policy.c client/c/egress_request.h client/c/egress_policy.h $(FUZZ_PROTO)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -lcbor

fuzz: $(FUZZ_TARGETS)
