"""A test double for Firecracker and Cloud Hypervisor, which cannot run on this
machine (its KVM cannot run a stock guest, and neither VMM is installable).
Tests put it first on PATH as `firecracker` or `cloud-hypervisor` (argv[1]
names which) so that Sandbox.create(vmm=...) launches it for real.

It reads its launch description as that VMM would (Firecracker: `--no-api
--config-file JSON`; Cloud Hypervisor: its command line), checks that every
file it names exists and that the kernel is an ELF vmlinux (what both load),
and exits 1 with a message otherwise. Then it serves the hybrid-vsock socket
(`uds_path` / `--vsock socket=`) with tests/fake_hybrid_vsock.FakeHybridVsock:
the `CONNECT <port>` handshake, refusals while the "guest" does not listen
yet, and a bridge to the real cellvm-agent whose Unix socket is
$CELLVM_FAKE_VMM_AGENT: the agent the guest would run. What it was given goes
to $CELLVM_FAKE_VMM_LOG (one JSON object). It runs until killed.

$CELLVM_FAKE_VMM_REFUSE: connections turned away first (default 3).
$CELLVM_FAKE_VMM_FAIL: exit 1 with that text at once (a VMM that fails to start).
"""

import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_hybrid_vsock import FakeHybridVsock  # noqa: E402

AGENT_PORT = 1024


def fail(msg):
    print(f"fake VMM: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def firecracker(argv):
    if argv[:2] != ["--no-api", "--config-file"] or len(argv) != 3:
        fail(f"expected --no-api --config-file PATH, got {argv}")
    with open(argv[2]) as f:
        cfg = json.load(f)
    boot = cfg["boot-source"]
    files = [boot["kernel_image_path"]] + [d["path_on_host"] for d in cfg["drives"]]
    if "initrd_path" in boot:
        files.append(boot["initrd_path"])
    return cfg, boot["kernel_image_path"], files, cfg["vsock"]["uds_path"], None


def cloud_hypervisor(argv):
    if len(argv) % 2:
        fail(f"options must come in pairs: {argv}")
    opts = dict(zip(argv[0::2], argv[1::2]))
    kv = {k: dict(p.split("=", 1) for p in v.split(",")) for k, v in opts.items()
          if k in ("--disk", "--vsock", "--serial")}
    files = [opts["--kernel"], kv["--disk"]["path"]]
    if "--initramfs" in opts:
        files.append(opts["--initramfs"])
    console = kv["--serial"]["file"] if "--serial" in kv else None
    return opts, opts["--kernel"], files, kv["--vsock"]["socket"], console


def main():
    name, argv = sys.argv[1], sys.argv[2:]
    if os.environ.get("CELLVM_FAKE_VMM_FAIL"):
        fail(os.environ["CELLVM_FAKE_VMM_FAIL"])
    cfg, kernel, files, uds_path, console = (firecracker if name == "firecracker"
                                            else cloud_hypervisor)(argv)
    for path in files:
        if not os.path.isfile(path):
            fail(f"{path}: no such file")
    with open(kernel, "rb") as f:
        if f.read(4) != b"\x7fELF":
            fail(f"{kernel} is not an ELF kernel")
    with open(os.environ["CELLVM_FAKE_VMM_LOG"], "w") as f:
        json.dump({"vmm": name, "argv": argv, "config": cfg, "pid": os.getpid()}, f)
    if console:
        with open(console, "w") as f:
            f.write("fake guest console\n")
    print(f"fake {name}: serving {uds_path}", flush=True)
    FakeHybridVsock(uds_path, AGENT_PORT, target=os.environ["CELLVM_FAKE_VMM_AGENT"],
                    refuse_first=int(os.environ.get("CELLVM_FAKE_VMM_REFUSE", "3")))
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
