#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/seeds/*): valid streams of
the messages each side receives, so the fuzzers start from real traffic."""
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
