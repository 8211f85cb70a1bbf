"""A test double for qemu-system-x86_64, for what QEMU cannot do on this
machine: a vhost-vsock device (there is no /dev/vhost-vsock here) and, with
it, QEMU's refusal to start when another VM holds the guest CID. Tests put it
first on PATH; the real QEMU boots the real
image in tests/test_vm_qemu.py and tests/test_cli_vm.py.

What it does, in QEMU's order: records its argv (one JSON line appended to
$CELLVM_FAKE_QEMU_LOG), creates the `-chardev socket,id=agent,path=...`
listening socket and the console file (QEMU creates chardevs first), then
"realizes" the devices: while fewer than $CELLVM_FAKE_QEMU_CID_CLASHES
launches are logged before this one and the argv has a vhost-vsock device,
it prints QEMU's error for a taken CID and exits 1, as QEMU 7.2 does
(hw/virtio/vhost-vsock.c: "vhost-vsock: unable to set guest cid" with the
errno text). Otherwise it runs until killed; with $CELLVM_FAKE_QEMU_AGENT
(a real cellvm-agent's Unix socket) each connection to the serial socket is
bridged to that agent, standing in for virtio-serial and the guest.
"""

import json
import os
import signal
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_hybrid_vsock import pump  # noqa: E402


def option_values(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def props(value):
    kind, _, rest = value.partition(",")
    return kind, dict(p.split("=", 1) for p in rest.split(",") if "=" in p)


def bridge(conn, agent):
    g = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    g.connect(agent)
    threading.Thread(target=pump, args=(g, conn), daemon=True).start()
    pump(conn, g)


def main():
    argv = sys.argv[1:]
    log = os.environ["CELLVM_FAKE_QEMU_LOG"]
    try:
        with open(log) as f:
            earlier = sum(1 for _ in f)
    except FileNotFoundError:
        earlier = 0
    with open(log, "a") as f:
        f.write(json.dumps(argv) + "\n")

    serial = console = None
    for value in option_values(argv, "-chardev"):
        kind, p = props(value)
        if kind == "socket" and p.get("id") == "agent":
            serial = p["path"]
        elif kind == "file" and p.get("id") == "console":
            console = p["path"]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    srv.bind(serial)
    srv.listen(1)
    with open(console, "w") as f:
        f.write("fake QEMU: no guest\n")

    for value in option_values(argv, "-device"):
        kind, p = props(value)
        if kind == "vhost-vsock-device" and earlier < int(os.environ.get("CELLVM_FAKE_QEMU_CID_CLASHES", "0")):
            print(f"qemu-system-x86_64: -device {value}: vhost-vsock: unable to set guest cid: "
                  f"Address already in use", file=sys.stderr, flush=True)
            sys.exit(1)

    agent = os.environ.get("CELLVM_FAKE_QEMU_AGENT")
    while True:
        if not agent:
            signal.pause()
        conn, _ = srv.accept()
        threading.Thread(target=bridge, args=(conn, agent), daemon=True).start()


if __name__ == "__main__":
    main()
