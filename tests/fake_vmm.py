"""A test double for Firecracker and Cloud Hypervisor, which cannot run on this
machine (its KVM cannot run a stock guest, and neither VMM is installable).
Tests put it first on PATH as `firecracker` or `cloud-hypervisor` (argv[1]
names which) so that Sandbox.create(vmm=...) launches it for real.

It reads its launch description as that VMM would (Firecracker: `--no-api
--config-file JSON`, or `--api-sock S [--config-file JSON]`; Cloud
Hypervisor: its command line, with or without `--api-socket S`), checks that
every file it names exists and that the kernel is an ELF vmlinux (what both
load), and exits 1 with a message otherwise. Then it serves the hybrid-vsock
socket (`uds_path` / `--vsock socket=`) with
tests/fake_hybrid_vsock.FakeHybridVsock: the `CONNECT <port>` handshake,
refusals while the "guest" does not listen yet, and a bridge to the real
cellvm-agent whose Unix socket is $CELLVM_FAKE_VMM_AGENT: the agent the
guest would run. What it was given goes to $CELLVM_FAKE_VMM_LOG (one JSON
object). It runs until killed.

With an API socket it also answers the snapshot calls as the two VMMs
document them (Firecracker's swagger and docs/snapshotting; Cloud
Hypervisor's openapi and docs/snapshot_restore.md), each appended as a JSON
line to $CELLVM_FAKE_VMM_LOG.api:
- Firecracker: PATCH /vm {state: Paused|Resumed}; PUT /snapshot/create
  {snapshot_type: Full, snapshot_path, mem_file_path} (only when paused);
  started with `--api-sock` alone, PUT /snapshot/load {snapshot_path,
  mem_backend: {backend_type: File, backend_path}, resume_vm?} (only before
  anything else; a failed load ends the process, as Firecracker does). It is
  a release before 1.16 (`--version` says 1.15.1): the load's body is
  deny_unknown_fields, so 1.16's `vsock_override` is a 400, and the vsock
  socket is the snapshot's `uds_path`, a relative one bound in the process's
  working directory.
- Cloud Hypervisor: PUT /api/v1/vm.pause, vm.resume, vm.snapshot
  {destination_url: file://DIR} (config.json, state.json, memory-ranges; only
  when paused); started with `--api-socket` alone, vm.restore {source_url}
  (the VM comes back paused).
The "snapshot" files are the stand-in's own (JSON state naming the vsock
socket, a sparse memory file of the VM's size): the guest is still the one
dev-mode agent, whatever was "restored".

$CELLVM_FAKE_VMM_REFUSE: connections turned away first (default 3).
$CELLVM_FAKE_VMM_FAIL: exit 1 with that text at once (a VMM that fails to start).
"""

import json
import os
import signal
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_hybrid_vsock import FakeHybridVsock  # noqa: E402

AGENT_PORT = 1024
FC_VERSION = "Firecracker v1.15.1"
# Firecracker 1.15's LoadSnapshotConfig (serde deny_unknown_fields): what
# else a /snapshot/load body holds is refused with a 400.
FC_LOAD_FIELDS = {"snapshot_path", "mem_file_path", "mem_backend", "enable_diff_snapshots",
                  "track_dirty_pages", "resume_vm", "network_overrides"}
FC_MAGIC = "fake-firecracker-snapshot"
CH_MAGIC = "fake-cloud-hypervisor-snapshot"


def fail(msg):
    print(f"fake VMM: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def firecracker(argv):
    """(config or None, kernel, files, uds_path, console, api socket)."""
    api = None
    if argv[:1] == ["--api-sock"] and len(argv) >= 2:
        api, argv = argv[1], argv[2:]
        if not argv:
            return None, None, [], None, None, api
    elif argv[:1] == ["--no-api"]:
        argv = argv[1:]
    else:
        fail(f"expected --no-api or --api-sock PATH, got {argv}")
    if argv[:1] != ["--config-file"] or len(argv) != 2:
        fail(f"expected --config-file PATH, got {argv}")
    with open(argv[1]) as f:
        cfg = json.load(f)
    boot = cfg["boot-source"]
    files = [boot["kernel_image_path"]] + [d["path_on_host"] for d in cfg["drives"]]
    if "initrd_path" in boot:
        files.append(boot["initrd_path"])
    return cfg, boot["kernel_image_path"], files, cfg["vsock"]["uds_path"], None, api


def cloud_hypervisor(argv):
    if len(argv) % 2:
        fail(f"options must come in pairs: {argv}")
    opts = dict(zip(argv[0::2], argv[1::2]))
    api = opts.get("--api-socket")
    if set(opts) == {"--api-socket"}:
        return None, None, [], None, None, api
    kv = {k: dict(p.split("=", 1) for p in v.split(",")) for k, v in opts.items()
          if k in ("--disk", "--vsock", "--serial")}
    files = [opts["--kernel"], kv["--disk"]["path"]]
    if "--initramfs" in opts:
        files.append(opts["--initramfs"])
    console = kv["--serial"]["file"] if "--serial" in kv else None
    return opts, opts["--kernel"], files, kv["--vsock"]["socket"], console, api


class Vm:
    """The stand-in's "VM": its vsock bridge, run state and size."""

    def __init__(self, name, log):
        self.name, self.log = name, log
        self.vsock = None
        self.state = "Not started"
        self.mem_bytes = 0
        self.config = None

    def boot(self, uds_path, mem_bytes, config):
        self.serve(uds_path)
        self.state, self.mem_bytes, self.config = "Running", mem_bytes, config

    def serve(self, uds_path):
        self.vsock = FakeHybridVsock(uds_path, AGENT_PORT, target=os.environ["CELLVM_FAKE_VMM_AGENT"],
                                     refuse_first=int(os.environ.get("CELLVM_FAKE_VMM_REFUSE", "3")))
        self.uds_path = uds_path

    def set_running(self, running):
        self.state = "Running" if running else "Paused"
        if self.vsock is not None:
            self.vsock.accepting = running


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)


def firecracker_api(vm, method, url, body):
    """(status, reply) of one call, as Firecracker answers it."""
    if method == "PATCH" and url == "/vm":
        if vm.state == "Not started":
            return 400, "the microVM is not started"
        if body.get("state") not in ("Paused", "Resumed"):
            return 400, f"unknown state {body.get('state')!r}"
        vm.set_running(body["state"] == "Resumed")
        return 204, None
    if method == "PUT" and url == "/snapshot/create":
        if vm.state != "Paused":
            return 400, "Create snapshot: the microVM is not paused"
        if body.get("snapshot_type", "Full") != "Full":
            return 400, "only Full snapshots"
        with open(body["snapshot_path"], "w") as f:
            json.dump({"magic": FC_MAGIC, "vsock_uds_path": vm.uds_path, "config": vm.config,
                       "mem_bytes": vm.mem_bytes}, f)
        sparse(body["mem_file_path"], vm.mem_bytes)
        return 204, None
    if method == "PUT" and url == "/snapshot/load":
        if vm.state != "Not started":
            return 400, "Load snapshot: the microVM is already configured"
        unknown = sorted(set(body) - FC_LOAD_FIELDS)
        if unknown:
            return 400, (f"An error occurred when deserializing the json body of a request: "
                         f"unknown field `{unknown[0]}`, expected one of "
                         f"{', '.join(sorted(FC_LOAD_FIELDS))}")
        backend = body.get("mem_backend") or {}
        if backend.get("backend_type") != "File" or "mem_file_path" in body:
            return 400, "Load snapshot: expected mem_backend {backend_type: File, backend_path}"
        try:
            with open(body["snapshot_path"]) as f:
                snap = json.load(f)
            assert snap["magic"] == FC_MAGIC
            size = os.path.getsize(backend["backend_path"])
        except (OSError, ValueError, KeyError, AssertionError) as e:
            return -400, f"Load snapshot error: Failed to restore from snapshot: {e!r}"
        if size != snap["mem_bytes"]:
            return -400, "Load snapshot error: memory file size mismatch"
        uds = snap["vsock_uds_path"]  # relative: in this process's working directory
        try:
            vm.serve(uds)
        except OSError as e:
            return -400, f"Load snapshot error: VsockUnixBackend: Error binding to host-side Unix socket: {e}"
        vm.config, vm.mem_bytes = snap["config"], size
        vm.set_running(bool(body.get("resume_vm")))
        return 204, None
    return 400, f"no such API: {method} {url}"


def cloud_hypervisor_api(vm, method, url, body):
    if not url.startswith("/api/v1/"):
        return 404, "not found"
    action = url[len("/api/v1/"):]
    if action in ("vm.pause", "vm.resume"):
        if vm.state == "Not started":
            return 404, "the VM is not created"
        if (action == "vm.pause") != (vm.state == "Running"):
            return 405, f"the VM is {vm.state}"
        vm.set_running(action == "vm.resume")
        return 204, None
    if action == "vm.snapshot":
        if vm.state != "Paused":
            return 405, "the VM is not paused"
        d = body["destination_url"]
        if not d.startswith("file://"):
            return 400, "destination_url must be file://"
        d = d[len("file://"):]
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(vm.config, f)
        with open(os.path.join(d, "state.json"), "w") as f:
            json.dump({"magic": CH_MAGIC, "mem_bytes": vm.mem_bytes}, f)
        sparse(os.path.join(d, "memory-ranges"), vm.mem_bytes)
        return 204, None
    if action == "vm.restore":
        if vm.state != "Not started":
            return 404, "the VM is already created"
        d = body["source_url"][len("file://"):]
        try:
            with open(os.path.join(d, "config.json")) as f:
                config = json.load(f)
            with open(os.path.join(d, "state.json")) as f:
                state = json.load(f)
            assert state["magic"] == CH_MAGIC
            size = os.path.getsize(os.path.join(d, "memory-ranges"))
        except (OSError, ValueError, KeyError, AssertionError) as e:
            return 400, f"Error restoring VM: {e!r}"
        sock = dict(p.split("=", 1) for p in config["--vsock"].split(","))["socket"]
        try:
            vm.serve(sock)
        except OSError as e:
            return 409, f"Error restoring VM: vsock socket: {e}"
        vm.config, vm.mem_bytes = config, size
        vm.set_running(False)
        return 204, None
    return 400, f"no such API: {method} {url}"


def serve_api(path, vm, handler):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    srv.bind(path)
    srv.listen(8)
    lock = threading.Lock()

    def one(c):
        with c:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = c.recv(4096)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            method, url, _ = lines[0].split(" ", 2)
            headers = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
            n = int(headers.get("content-length", "0"))
            while len(rest) < n:
                rest += c.recv(n - len(rest))
            body = json.loads(rest) if rest else {}
            with lock:
                status, reply = handler(vm, method, url, body)
                with open(os.environ["CELLVM_FAKE_VMM_LOG"] + ".api", "a") as f:
                    f.write(json.dumps({"vmm": vm.name, "pid": os.getpid(), "method": method,
                                        "url": url, "body": body, "status": abs(status)}) + "\n")
            end = status < 0  # Firecracker ends the process after a failed load
            status = abs(status)
            if status == 204:
                c.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
            else:
                payload = json.dumps({"fault_message": reply}).encode()
                c.sendall(f"HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
            if end:
                os._exit(1)

    def loop():
        while True:
            c, _ = srv.accept()
            threading.Thread(target=one, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def main():
    name, argv = sys.argv[1], sys.argv[2:]
    if argv == ["--version"]:
        print(FC_VERSION if name == "firecracker" else "cloud-hypervisor v40.0.0")
        return
    if os.environ.get("CELLVM_FAKE_VMM_FAIL"):
        fail(os.environ["CELLVM_FAKE_VMM_FAIL"])
    cfg, kernel, files, uds_path, console, api = (firecracker if name == "firecracker"
                                                 else cloud_hypervisor)(argv)
    for path in files:
        if not os.path.isfile(path):
            fail(f"{path}: no such file")
    if kernel is not None:
        with open(kernel, "rb") as f:
            if f.read(4) != b"\x7fELF":
                fail(f"{kernel} is not an ELF kernel")
    with open(os.environ["CELLVM_FAKE_VMM_LOG"], "w") as f:
        json.dump({"vmm": name, "argv": argv, "config": cfg, "pid": os.getpid(), "cwd": os.getcwd()}, f)
    if console:
        with open(console, "w") as f:
            f.write("fake guest console\n")
    vm = Vm(name, os.environ["CELLVM_FAKE_VMM_LOG"])
    if cfg is not None:
        if name == "firecracker":
            mem = cfg["machine-config"]["mem_size_mib"] << 20
        else:
            mem = int(cfg["--memory"].split("=", 1)[1].rstrip("M")) << 20
        vm.boot(uds_path, mem, cfg)
        print(f"fake {name}: serving {uds_path}", flush=True)
    if api:
        serve_api(api, vm, firecracker_api if name == "firecracker" else cloud_hypervisor_api)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
