"""Connect to the agent over AF_VSOCK (CID 1, vsock_loopback), send HELLO,
and record what came back in /run/cellvm/vsock-selftest.json.

Started by agent-selftest (test boots only). cbor2 is not in the image, so
the HELLO body is written by hand and the reply is checked by its type and
the keys it must contain."""

import json
import os
import socket
import struct
import time

PORT = int(os.environ.get("CELLVM_SELFTEST_VSOCK_PORT", "1024"))
OUT = "/run/cellvm/vsock-selftest.json"
HELLO = b"\xa1\x68protocol\x01"  # {"protocol": 1}


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def attempt():
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    try:
        s.settimeout(10)
        s.connect((1, PORT))  # VMADDR_CID_LOCAL
        s.sendall(struct.pack(">IHHI", len(HELLO), 0x0001, 0, 7) + HELLO)
        length, mtype, flags, rid = struct.unpack(">IHHI", recv_exact(s, 12))
        body = recv_exact(s, min(length, 1 << 20))
        return {"ok": mtype == 0x8000 and rid == 7 and b"agent_version" in body,
                "type": mtype, "id": rid, "has_default_context": b"default_context" in body}
    finally:
        s.close()


def main():
    result, last = None, None
    t0 = time.monotonic()
    while result is None and time.monotonic() - t0 < 60:
        try:
            result = attempt()
        except OSError as e:  # not listening yet
            last = repr(e)
            time.sleep(0.05)
    result = result or {"ok": False, "error": last}
    result["seconds"] = round(time.monotonic() - t0, 3)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT + ".tmp", "w") as f:
        json.dump(result, f)
    os.chmod(OUT + ".tmp", 0o644)
    os.replace(OUT + ".tmp", OUT)
    print("cellvm vsock self-test:", json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
