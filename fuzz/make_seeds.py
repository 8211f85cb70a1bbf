#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/seeds/*): valid streams of
the messages each side receives, so the fuzzers start from real traffic."""
import base64
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "client", "python"))
from cellvm import _wire as w  # noqa: E402


def write(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


requests = [
    (w.HELLO, {"protocol": 1, "client": "seed"}),
    (w.PING, {"payload": {"a": [1, -2, 3.5, None, True, b"\x00\xff"]}}),
    (w.EXECUTE, {"code": "print(1)\n1+1", "context": "c", "envs": {"A": "b"}, "timeout_ms": 1000}),
    (w.CANCEL, {"id": 7}),
    (w.CONTEXT_CREATE, {"language": "python", "cwd": "/tmp"}),
    (w.CONTEXT_LIST, {}),
    (w.INTERRUPT, {"context": "c"}),
    # PORT_DATA (0x0301, decoded in place: protocol/port_data.c) as serve sends it.
    (0x0301, {"data": bytes(range(256)) * 2, "ack": 65536}),
    (0x0301, {"ack": 70000, "eof": True}),
]
for i, (t, body) in enumerate(requests):
    # First byte of an agent-decoder input: the piece size the stream is fed in.
    write("agent_decoder", f"req{i}", bytes([i * 37 % 256]) + w.encode_frames(t, i + 1, body))
write("agent_decoder", "all", b"\x05" + b"".join(w.encode_frames(t, i + 1, b) for i, (t, b) in enumerate(requests)))

events = [
    (w.OK, {"protocol": 1, "agent_version": "0.1.0", "capabilities": ["execute"], "boot": {"agent_start": 5}}),
    (w.ERROR, {"code": "timeout", "message": "too slow"}),
    (w.EXEC_INPUT, {"execution_count": 3}),
    (w.STREAM, {"name": "stdout", "text": "hello\n"}),
    (w.DISPLAY, {"data": {"text/plain": "<Figure>", "image/png": b"\x89PNG\r\n\x1a\n"}, "metadata": {}}),
    (w.RESULT, {"execution_count": 3, "data": {"text/plain": "2", "e2b/data": {"a": [1, 2]}}}),
    (w.EXEC_ERROR, {"name": "NameError", "value": "name 'x' is not defined", "traceback": ["Traceback", "NameError"]}),
]
for i, (t, body) in enumerate(events):
    write("client_decoder", f"ev{i}", w.encode_frames(t, 2, body))
write("client_decoder", "all", b"".join(w.encode_frames(t, 2, b) for t, b in events))


# --- fuzz_serve_request: what E2B's SDKs send `cellvm serve` ------------------
# First byte: which reader (fuzz/fuzz_serve_request.c). Multipart seeds are
# "<Content-Type>\n<piece-size byte><body>"; bodies as the SDKs write them
# (JS undici FormData, Python httpx, Go's mime/multipart).
def serve_seed(name, mode, data):
    write("serve_request", name, bytes([mode]) + data)


def multipart(boundary, parts, preamble=b"", epilogue=b"", padding=b""):
    out = preamble
    for headers, data in parts:
        out += b"--" + boundary + padding + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n"
        out += data + b"\r\n"
    return out + b"--" + boundary + b"--\r\n" + epilogue


def disposition(name, filename=None):
    def q(s):
        return b'"' + s.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
    h = b"Content-Disposition: form-data; name=" + q(name)
    if filename is not None:
        h += b"; filename=" + q(filename)
    return h


OCTET = b"Content-Type: application/octet-stream"
undici = b"----formdata-undici-027398457123"
serve_seed("mp_js_one_file", 0, b"multipart/form-data; boundary=" + undici + b"\n\x07" + multipart(
    undici, [([disposition(b"file", b"/home/user/hello.txt"), OCTET], b"hello, world\n")]))
httpx = b"5c8b1f7a2b0e4d9c8f6a3e2d1c0b9a87"
serve_seed("mp_py_two_files", 0, b"multipart/form-data; boundary=" + httpx + b"\n\x31" + multipart(
    httpx, [([disposition(b"file", b"/home/user/data/a.csv"), b"Content-Type: text/csv"],
             b"regiao,vendas\r\nnorte,10\r\nsul,20\r\n"),
            ([disposition(b"file", b"relative/dir/b.bin"), OCTET], bytes(range(256)))]))
serve_seed("mp_quoted_escapes", 0, b'multipart/form-data; boundary="go:boundary (1)"; charset=utf-8\n\x92'
           + multipart(b"go:boundary (1)",
                       [([disposition(b"file", b'dir/we"ird\\name; name=x.txt'), OCTET], b"quoted\r\n"),
                        ([disposition(b"other")], b"a form field, not a file")],
                       preamble=b"This is the preamble.\r\n", epilogue=b"epilogue\r\n", padding=b" \t"))
serve_seed("mp_crlf_in_data", 0, b"Multipart/Form-Data;boundary=xYz\n\xfe" + multipart(
    b"xYz", [([b"content-disposition: form-data; filename=\"/tmp/x\"; name=file"],
              b"\r\n--xY\r\n--x\r\n\r\n")]))
serve_seed("mp_truncated", 0, b"multipart/form-data; boundary=abc\n\x00" + multipart(
    b"abc", [([disposition(b"file", b"/a")], b"data")])[:-9])
# headers of exactly 8 KiB (MP_HEADER_MAX), fed in small pieces (0x40) cut
# between the terminating CRLF CRLF's bytes (0x42)
big_headers = b'Content-Disposition: form-data; name="file"; filename="/a"\r\nX-Pad: '
serve_seed("mp_headers_8k", 0, b"multipart/form-data; boundary=abc\n\x42--abc\r\n" + big_headers
           + b"p" * (8192 - 2 - len(big_headers)) + b"\r\n\r\nDATA\r\n--abc--\r\n")
serve_seed("mp_no_disposition", 0, b"multipart/form-data; boundary=abc\n\x10--abc\r\n"
           b"Content-Type: text/plain\r\n\r\nx\r\n--abc--\r\n")
serve_seed("mp_no_boundary", 0, b"multipart/form-data\n\x00--abc\r\n\r\nx\r\n--abc--\r\n")
# Well-formed bodies the target builds: seed, flags, boundary length, boundary
# bytes, then name 0xff filename 0xff data 0xff per part.
serve_seed("mp_roundtrip", 1, b"\x05\x2b\x0cboundary1234" + b"file\xff/home/user/a.txt\xffhello\xff"
           + b"file\xffb\"q\\.txt\xff\r\n--bound\r\n\xffnote\xff\xffjust a field")
serve_seed("mp_roundtrip_big", 1, b"\x80\xd1\x45" + bytes(range(0x45)) + b"file\xff/x\xff" + b"A\r\n" * 3000)


def envelope(flags, obj):
    body = json.dumps(obj, separators=(",", ":")).encode()
    return bytes([flags]) + len(body).to_bytes(4, "big") + body


start = {"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "echo hi"], "envs": {"A": "1"},
                     "cwd": "/home/user"}, "stdin": False, "tag": "t"}
serve_seed("connect_start", 2, envelope(0, start))
serve_seed("connect_connect", 2, envelope(0, {"process": {"pid": 123}}))
serve_seed("connect_end_stream", 2, envelope(2, {}))
serve_seed("connect_compressed", 2, envelope(1, {"a": 1}))
serve_seed("connect_unary_listdir", 2, b'{"path":"/home/user","depth":"2"}')
serve_seed("connect_unary_signal", 2, b'{"process":{"pid":"7"},"signal":"SIGNAL_SIGKILL"}')
serve_seed("connect_short", 2, b"\x00\x00\x00")

serve_seed("json_create", 3, json.dumps({"templateID": "code-interpreter-v1", "timeout": 300,
                                          "metadata": {"k": "v"}, "envVars": {"A": "b"},
                                          "secure": True, "allow_internet_access": True,
                                          "autoPause": False}).encode())
serve_seed("json_create_bad", 3, b'{"templateID":"base","timeout":"300","metadata":{"k":1},'
           b'"envVars":[],"network":{"allowOut":["1.1.1.1"]}}')
serve_seed("json_execute", 3, b'{"code":"import pandas as pd\\npd.DataFrame()","context_id":null,'
           b'"language":"python","env_vars":{"X":"\\u00e9"}}')
serve_seed("json_duplicate", 3, b'{"code":"1","code":"2"}')

for name, hdr in [("basic_user", b"Basic dXNlcjo="), ("basic_root", b"Basic cm9vdDo="),
                  ("basic_urlsafe", b"basic X19hLWIuYzpwYXNz"), ("basic_bad", b"Basic ===="),
                  ("bearer", b"Bearer e2b_0123456789abcdef0123456789abcdef01234567")]:
    serve_seed(name, 4, hdr)

token = b"0123456789abcdef0123456789abcdef"  # the target's first fake sandbox


def signature(path, op, user, exp=None):
    raw = b":".join([path, op, user, token] + ([exp] if exp is not None else []))
    return b"v1_" + base64.b64encode(hashlib.sha256(raw).digest()).rstrip(b"=")


serve_seed("sign_read", 5, b"\x00/home/user/a.txt\nuser\n" + signature(b"/home/user/a.txt", b"read", b"user"))
serve_seed("sign_write_exp", 5, b"\x01/home/user/b.txt\n\n"
           + signature(b"/home/user/b.txt", b"write", b"", b"4102444800") + b"\n4102444800")
serve_seed("sign_expired", 5, b"\x04/a\nroot\nx\n1000000000")
for name, t in [("time_z", b"2026-12-03T21:43:26.123Z"), ("time_offset", b"2026-12-03T21:43:26+02:00"),
                ("time_plain", b"2026-12-03T21:43:26Z"), ("time_micro", b"2026-12-03T21:43:26.123456-05:30")]:
    serve_seed(name, 6, t)

# A sandbox's own server's responses (fuzz_guest_http): the first byte says
# whether the request was a HEAD, then the bytes as the guest sends them.
guest_http = {
    "length": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n"
               b"6;ext=1\r\nfirst,\r\n4\r\nlast\r\n0\r\nX-Trailer: t\r\n\r\n",
    "to_eof": b"HTTP/1.0 201 Made\nServer: SimpleHTTP/0.6 Python/3.11\n\nuntil the end",
    "interim": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nDate: x\r\n\r\n",
    "head": b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
}
for name, raw in guest_http.items():
    write("guest_http", name, (b"\x01" if name == "head" else b"\x00") + raw)

# --- fuzz_mcp_message: what MCP clients send `cellvm mcp` ---------------------
# First byte: even, one JSON-RPC message (2 mod 4: on a 2025-03-26 session,
# which takes batches); odd, tool text (then its bound).
def mcp_seed(name, msg, first=b"\x00"):
    write("mcp_message", name, first + json.dumps(msg).encode())


mcp_seed("initialize", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "seed", "version": "1"}}})
mcp_seed("initialized", {"jsonrpc": "2.0", "method": "notifications/initialized"})
mcp_seed("cancelled", {"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 3, "reason": "timeout"}})
mcp_seed("ping", {"jsonrpc": "2.0", "id": "p-1", "method": "ping"})
mcp_seed("tools_list", {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
mcp_seed("response", {"jsonrpc": "2.0", "id": 9, "result": {}})
for i, (name, args) in enumerate([
        ("run_code", {"code": "1+1", "language": "python", "timeout": 2.5}),
        ("write_file", {"path": "a/b.txt", "content": "hi"}),
        ("write_file", {"path": "bin", "content_base64": "AAEC+vv8/f7/"}),
        ("read_file", {"path": "chart.png"}),
        ("list_files", {}),
        ("run_command", {"command": "echo hi; exit 3", "timeout": 1}),
        ("nope", {})]):
    mcp_seed(f"call{i}", {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                          "params": {"name": name, "arguments": args}})
mcp_seed("batch", [{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                   {"jsonrpc": "2.0", "method": "notifications/initialized"},
                   {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "run_code", "arguments": {"code": "1"}}},
                   {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}}, 7], b"\x02")
mcp_seed("batch_refused", [{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
write("mcp_message", "text_utf8", b"\x01\x10" + "línea \x1b[31mred\x1b[0m ✓ 😀".encode() * 3)
write("mcp_message", "text_bad", b"\x01\xff" + b"\xff\xfe\xc3(\x00\xed\xa0\x80ok")
