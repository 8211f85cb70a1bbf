"""The VM generation ID end to end, where it exists: QEMU's q35 machine with
`-device vmgenid,guid=auto` and `make kernel`'s kernel (CONFIG_VMGENID; the
image's Debian kernel has no driver, and microvm describes no such device).
A guest whose live context holds a known random state is saved (QMP stop +
migrate to a file, no SNAPSHOT_PREPARE: a VMM builder's own tooling) and
restored in a new QEMU, which draws a new generation ID: the guest kernel
reseeds and logs its VM-fork notice, the agent sees it in the kernel log, and
the context's first cell runs reseeded, without NEW_GENERATION.

Runs only where `make kernel` was built (build/kernel/bzImage): CI does not
build it. Two TCG boots' worth of time (one boot, one restore)."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

import conftest
from cellvm import _wire
from test_snapshot_reseed import DRAW_PYTHON, FIX_PYTHON

KERNEL = os.path.join(conftest.ROOT, "build", "kernel", "bzImage")
ROOTFS = os.path.join(conftest.IMAGE, "rootfs.ext4")
BOOT_TIMEOUT = 300

pytestmark = pytest.mark.skipif(not os.path.exists(KERNEL),
                                reason="needs `make kernel` (build/kernel/bzImage: CONFIG_VMGENID)")


def qemu_argv(d, incoming=None):
    import registry_view
    cmdline = ("console=ttyS0 root=/dev/vda rootfstype=ext4 ro init=/sbin/cellvm-init panic=-1 "
               "loglevel=6 8250.nr_uarts=1 random.trust_cpu=on cryptomgr.notests reboot=t "
               f"tsc_early_khz={registry_view.host_tsc_khz()} tsc=reliable")
    argv = ["qemu-system-x86_64", "-M", "q35", "-nodefaults", "-no-user-config", "-nographic",
            "-no-reboot", "-m", "1024", "-smp", "1", "-accel", "tcg", "-cpu", "max",
            "-kernel", KERNEL, "-append", cmdline,
            "-chardev", f"file,id=console,path={d}/console.log,append=on",
            "-serial", "chardev:console",
            "-drive", f"id=root,file={ROOTFS},format=raw,if=none,readonly=on",
            "-device", "virtio-blk-pci,drive=root", "-device", "virtio-rng-pci",
            "-device", "virtio-serial-pci",
            "-chardev", f"socket,id=agent,path={d}/agent.sock,server=on,wait=off",
            "-device", "virtserialport,chardev=agent,name=cellvm",
            "-device", "vmgenid,guid=auto",
            "-qmp", f"unix:{d}/qmp.sock,server=on,wait=off"]
    if incoming:
        argv += ["-S", "-incoming", incoming]
    return argv


class Qmp:
    def __init__(self, path, timeout=60):
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            assert time.monotonic() < deadline, f"no QMP socket {path}"
            time.sleep(0.05)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.f = self.sock.makefile("rwb")
        self._read()  # the greeting
        self.call("qmp_capabilities")

    def _read(self):
        while True:
            msg = json.loads(self.f.readline())
            if "event" not in msg:
                return msg

    def call(self, cmd, **args):
        self.f.write(json.dumps({"execute": cmd, "arguments": args}).encode() + b"\n")
        self.f.flush()
        reply = self._read()
        assert "return" in reply, reply
        return reply["return"]

    def close(self):
        self.sock.close()


def start(d, incoming=None):
    for name in ("agent.sock", "qmp.sock"):
        if os.path.exists(os.path.join(d, name)):
            os.unlink(os.path.join(d, name))
    log = open(os.path.join(d, "qemu.err"), "ab")
    return subprocess.Popen(qemu_argv(d, incoming), stdout=log, stderr=log, start_new_session=True)


def connect(d, proc):
    path = os.path.join(d, "agent.sock")
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        assert proc.poll() is None, open(os.path.join(d, "qemu.err")).read()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return _wire.Connection.connect("unix:" + path, timeout=BOOT_TIMEOUT)


def cell(conn, code):
    """The cell's result text (a context of the default language)."""
    result = None
    for t, body in conn.request(_wire.EXECUTE, {"code": code}).messages(timeout=120):
        if t == _wire.RESULT:
            result = body["data"]["text/plain"]
        elif t == _wire.EXEC_ERROR:
            pytest.fail(f"{body['name']}: {body['value']}")
        elif t == _wire.ERROR:
            pytest.fail(str(body))
    return result


def console(d):
    with open(os.path.join(d, "console.log"), errors="replace") as f:
        return f.read()


@pytest.fixture
def vmdir():
    conftest.build_image_or_skip()
    d = tempfile.mkdtemp(prefix="cellvm-vmgenid-")
    procs = []
    yield d, procs
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, 9)
        p.wait()
    shutil.rmtree(d, ignore_errors=True)


def test_a_restored_copy_reseeds_on_the_vm_generation_id_alone(vmdir):
    d, procs = vmdir
    procs.append(start(d))
    conn = connect(d, procs[0])
    deadline = time.monotonic() + BOOT_TIMEOUT
    while "executor_ready" not in conn.hello["boot"]:
        assert time.monotonic() < deadline, "the zygote never got ready"
        time.sleep(1)
        conn.handshake({"protocol": 1}, 60)
    cell(conn, FIX_PYTHON)
    assert cell(conn, DRAW_PYTHON) == "(True, True, True)"  # a state that nothing reseeds
    cell(conn, FIX_PYTHON)
    conn.close()

    qmp = Qmp(os.path.join(d, "qmp.sock"))
    guid_before = qmp.call("query-vm-generation-id")["guid"]
    qmp.call("stop")
    state = os.path.join(d, "state")
    qmp.call("migrate", uri=f"exec:cat > {state}")
    deadline = time.monotonic() + 300
    while qmp.call("query-migrate").get("status") != "completed":
        assert time.monotonic() < deadline, qmp.call("query-migrate")
        time.sleep(0.2)
    qmp.call("quit")
    qmp.close()
    procs[0].wait(timeout=60)
    saved = console(d)

    procs.append(start(d, incoming=f"exec:cat {state}"))
    qmp = Qmp(os.path.join(d, "qmp.sock"))
    deadline = time.monotonic() + 300
    while qmp.call("query-status")["status"] == "inmigrate":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    guid_after = qmp.call("query-vm-generation-id")["guid"]
    qmp.call("cont")
    assert guid_after != guid_before  # guid=auto: the new QEMU drew another
    conn = connect(d, procs[1])
    assert (conn.hello["generation"], conn.hello["awaiting_generation"]) == (1, False)
    deadline = time.monotonic() + 60
    while "crng reseeded due to virtual machine fork" not in console(d)[len(saved):]:
        assert time.monotonic() < deadline, console(d)[len(saved):][-3000:]
        time.sleep(0.2)
    assert cell(conn, DRAW_PYTHON) == "(False, False, False)"
    assert "epoch 2 (the kernel says the VM generation ID changed)" in console(d)[len(saved):]
    conn.close()
    qmp.call("quit")
    qmp.close()
