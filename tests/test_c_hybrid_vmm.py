"""`cellvm run|shell --vmm firecracker|cloud-hypervisor`, booting cold
($CELLVM_SNAPSHOT=0, conftest's default; templates: test_c_snapshot_hybrid.py): the C launch of the
two VMMs (client/c/vmm_hybrid.c, vmm_firecracker.c, vmm_cloud_hypervisor.c),
the hybrid-vsock handshake (hybrid_vsock.c), the registry record, `cellvm
kill` and the host-side deadline.

The VMMs are a stand-in: neither Firecracker nor Cloud Hypervisor can run
here (no KVM that runs a stock guest, no vhost-vsock), so tests/fake_vmm.py
is first on PATH under each name. It reads the launch description as the VMM
would (Firecracker's --no-api --config-file JSON, Cloud Hypervisor's command
line), refuses a missing file or a kernel that is not an ELF vmlinux, serves
the hybrid-vsock socket (turning the first CONNECTs away, as a booting guest
does) and bridges it to a real cellvm-agent in dev mode: the process the
guest would run. What is not exercised: the VMM itself booting the image.
The launch descriptions are checked field for field against what
docs/VMM.md says of each VMM and the image's launch.txt.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import IMAGE, build_image_or_skip, process_gone, processes_mentioning  # noqa: E402

BUILD = os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build"))
CLI = os.path.abspath(os.path.join(BUILD, "cellvm"))
FAKE_VMM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_vmm.py")
VMMS = ["firecracker", "cloud-hypervisor"]


class Env:
    """The stand-in VMMs on PATH, a private TMPDIR (the VMs' temp dirs: short,
    a Unix socket path has at most 107 bytes) and a private registry."""

    def __init__(self, tmp_path, agent_sock):
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for name in VMMS:
            w = self.bin / name
            w.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE_VMM} {name} "$@"\n')
            w.chmod(0o755)
        self.tmp = tempfile.mkdtemp(prefix="cellvm-t-", dir="/tmp")
        self.runtime = tmp_path / "run"
        self.log = tmp_path / "fake-vmm.json"
        self.env = dict(os.environ, PATH=f"{self.bin}:{os.environ['PATH']}", TMPDIR=self.tmp,
                        CELLVM_RUNTIME_DIR=str(self.runtime), CELLVM_FAKE_VMM_AGENT=agent_sock,
                        CELLVM_FAKE_VMM_LOG=str(self.log), CELLVM_IMAGE=IMAGE,
                        CELLVM_PAUSED_DIR=str(tmp_path / "paused"))

    def cli(self, *args, input=None, timeout=120, **env):
        return subprocess.run([CLI, *args], input=input, capture_output=True, text=True,
                              timeout=timeout, env=dict(self.env, **env))

    def launched(self):
        with open(self.log) as f:
            return json.load(f)

    def vm_dir(self, launched):
        if launched["vmm"] == "firecracker":
            return launched["cwd"]  # its relative vsock socket is bound there
        socket = dict(p.split("=", 1) for p in launched["config"]["--vsock"].split(","))["socket"]
        return os.path.dirname(socket)

    def ps(self):
        r = self.cli("ps")
        assert r.returncode == 0, r.stderr
        return [ln.split() for ln in r.stdout.splitlines()[1:] if ln.strip()]


@pytest.fixture
def env(tmp_path, fresh_agent):
    """A private agent per test: the deadline test lets the guest's run out."""
    build_image_or_skip()
    e = Env(tmp_path, fresh_agent.sock)
    yield e
    leftovers = os.listdir(e.tmp)
    shutil.rmtree(e.tmp, ignore_errors=True)
    assert leftovers == [], f"left in TMPDIR: {leftovers}"


def launch_txt():
    """The image's launch.txt: {key: value}."""
    with open(os.path.join(IMAGE, "launch.txt")) as f:
        return dict(ln.rstrip("\n").split("=", 1) for ln in f if "=" in ln and not ln.startswith("#"))


def boot_args(vmm, extra):
    """The kernel command line of a cold launch: the image's base and the
    VMM's words, a TCG guest's TSC words (Firecracker without KVM: any
    frequency, the host's), then the CLI's own `extra` words."""
    t = launch_txt()
    return f"{t['cmdline_base']} {t['cmdline_vmm_' + vmm.replace('-', '_')]}", extra


def check_cmdline(cmdline, vmm, extra):
    head, tail = boot_args(vmm, extra)
    assert cmdline.startswith(head + " ") and cmdline.endswith(" " + tail), cmdline
    middle = cmdline[len(head) + 1:len(cmdline) - len(tail) - 1].split()
    # TCG: launch.txt's TCG words (e.g. clearcpuid=erms), its tsc_early_khz=
    # replaced by the host's, and tsc=reliable; KVM: none
    tcg = [w for w in launch_txt()["cmdline_tcg"].split() if not w.startswith("tsc_early_khz=")]
    tsc = [w for w in middle if w.startswith("tsc_early_khz=")]
    assert middle == [] or (sorted(w for w in middle if w not in tsc) ==
                            sorted(tcg + ["tsc=reliable"]) and len(tsc) == 1), cmdline


def extra_words(cmdline):
    """The CLI's own kernel command line words (limits, the guest's deadline)."""
    words = [w for w in cmdline.split() if w.startswith(("cellvm.mem_limit=", "cellvm.deadline_ms="))]
    assert len(words) == 2, cmdline
    return " ".join(words)


@pytest.mark.parametrize("vmm", VMMS)
def test_run_launches_as_documented_and_runs_a_cell(env, vmm):
    code = "import os\nprint(os.environ['GREETING'])\n6 * 7"
    r = env.cli("run", "--vmm", vmm, "--memory", "512", "--vcpus", "2", "--env", "GREETING=hello",
                "--", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hello\n42\n"
    launched = env.launched()
    vm_dir = env.vm_dir(launched)
    assert launched["vmm"] == vmm and os.path.dirname(vm_dir) == env.tmp
    assert os.path.basename(vm_dir).startswith(f"cellvm-{vmm}-")
    if vmm == "firecracker":
        assert launched["argv"] == ["--no-api", "--config-file", os.path.join(vm_dir, "firecracker.json")]
        cfg = launched["config"]
        extra = extra_words(cfg["boot-source"]["boot_args"])
        assert "cellvm.mem_limit=384M" in extra
        # Field for field (docs/VMM.md, "Firecracker").
        check_cmdline(cfg["boot-source"]["boot_args"], vmm, extra)
        assert cfg == {
            "boot-source": {"kernel_image_path": os.path.join(IMAGE, "vmlinux"),
                            "initrd_path": os.path.join(IMAGE, "initramfs.cpio.gz"),
                            "boot_args": cfg["boot-source"]["boot_args"]},
            "drives": [{"drive_id": "root", "path_on_host": os.path.join(IMAGE, "rootfs.ext4"),
                        "is_root_device": False, "is_read_only": True}],
            "machine-config": {"vcpu_count": 2, "mem_size_mib": 512, "smt": False},
            "vsock": {"guest_cid": 3, "uds_path": "vsock.sock"},
            "entropy": {}}
        assert cfg["boot-source"]["kernel_image_path"] == os.path.join(IMAGE, "vmlinux")
        with open(cfg["boot-source"]["kernel_image_path"], "rb") as f:
            assert f.read(4) == b"\x7fELF"  # Firecracker loads ELF, not bzImage
        assert cfg["vsock"] == {"guest_cid": 3, "uds_path": "vsock.sock"}
    else:
        argv = launched["argv"]
        extra = extra_words(argv[argv.index("--cmdline") + 1])
        assert "cellvm.mem_limit=384M" in extra
        cmdline = argv[argv.index("--cmdline") + 1]
        check_cmdline(cmdline, vmm, extra)
        assert argv == ["--kernel", os.path.join(IMAGE, "vmlinux"),
                        "--initramfs", os.path.join(IMAGE, "initramfs.cpio.gz"),
                        "--cmdline", cmdline,
                        "--disk", f"path={os.path.join(IMAGE, 'rootfs.ext4')},readonly=on",
                        "--cpus", "boot=2", "--memory", "size=512M", "--rng", "src=/dev/urandom",
                        "--vsock", f"cid=3,socket={vm_dir}/vsock.sock",
                        "--serial", f"file={vm_dir}/console.log", "--console", "off"]
        assert f"cid=3,socket={vm_dir}/vsock.sock" in argv
        with open(os.path.join(IMAGE, "manifest.json")) as f:  # virtio-pci devices
            assert "virtio_pci" in json.load(f)["modules"]["load"]
    # Gone with the run: the VMM, its temp dir (checked by the fixture), its record.
    assert process_gone(launched["pid"])
    assert not os.path.exists(vm_dir) and processes_mentioning(env.tmp) == []
    assert env.ps() == []


@pytest.mark.parametrize("vmm", VMMS)
def test_boot_files_reach_the_vmm(env, vmm, tmp_path):
    """--kernel / --initramfs none / --rootfs go into the launch description."""
    from test_vm_configs import make_erofs
    kernel = tmp_path / "vmlinux"  # stands for make kernel's: an ELF kernel elsewhere
    kernel.symlink_to(os.path.join(IMAGE, "vmlinux"))
    erofs = make_erofs(tmp_path)
    r = env.cli("run", "--vmm", vmm, "--kernel", str(kernel), "--initramfs", "none",
                "--rootfs", str(erofs), "--", "print('up')")
    assert r.returncode == 0 and r.stdout == "up\n", r.stderr
    launched = env.launched()
    if vmm == "firecracker":
        boot = launched["config"]["boot-source"]
        assert boot["kernel_image_path"] == str(kernel) and "initrd_path" not in boot
        assert launched["config"]["drives"][0]["path_on_host"] == str(erofs)
        words = boot["boot_args"].split()
    else:
        opts = launched["config"]
        assert opts["--kernel"] == str(kernel) and "--initramfs" not in opts
        assert opts["--disk"] == f"path={erofs},readonly=on"
        words = opts["--cmdline"].split()
    assert {"init=/sbin/cellvm-init", "rootfstype=erofs", "root=/dev/vda", "ro"} <= set(words)


@pytest.mark.parametrize("vmm", VMMS)
def test_the_sdks_create_is_cellvm_create(env, vmm, monkeypatch):
    """Sandbox.create(vmm=...) runs `cellvm create --json --vmm ...`: the C
    launch (its kernel words, --cmdline-extra's after them), the registry
    entry under the VMM's name, the agent connection passed over (hybrid
    vsock has no plain address), kill() through `cellvm kill`."""
    from cellvm import Sandbox
    for k, v in env.env.items():
        monkeypatch.setenv(k, v)
    sbx = Sandbox.create(IMAGE, vmm=vmm, memory_mb=512, extra_cmdline="cellvm.debug=1",
                         boot_timeout=60)
    try:
        assert (sbx._vm.vmm, sbx._vm.network) == (vmm, "none")
        assert sbx.run_code("6 * 7").text == "42"
        launched = env.launched()
        if vmm == "firecracker":
            words = launched["config"]["boot-source"]["boot_args"].split()
        else:
            words = launched["config"]["--cmdline"].split()
        assert words[-1] == "cellvm.debug=1" and "cellvm.mem_limit=384M" in words
        rows = env.ps()
        assert [(r[0], r[3]) for r in rows] == [(sbx.sandbox_id, vmm)]
    finally:
        sbx.kill()
    assert wait_gone(launched["pid"])
    assert env.ps() == []


def wait_gone(pid, tries=600):
    for _ in range(tries):
        if process_gone(pid):
            return True
        time.sleep(0.05)
    return False


def start_shell(env, vmm, **extra_env):
    p = subprocess.Popen([CLI, "shell", "--vmm", vmm], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                         env=dict(env.env, **extra_env))
    p.stdin.write("print('ready')\n\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if line != "ready\n":
        p.kill()
        pytest.fail(f"shell: {line!r}; stderr: {p.communicate()[1]}")
    return p


@pytest.mark.parametrize("vmm", VMMS)
def test_shell_files_registry_and_kill(env, vmm):
    """Cells keep their state; the registry lists the VMM under its name;
    `cellvm kill KEY` ends it and the shell then reports the lost VM."""
    p = start_shell(env, vmm)
    try:
        # A file written by one cell and read by the next, in the agent's workdir.
        p.stdin.write("open('note.txt', 'w').write('kept')\nx = 5\n\n")
        p.stdin.write("print(open('note.txt').read(), x * 2)\n\n")
        p.stdin.flush()
        assert p.stdout.readline() == "kept 10\n"
        launched = env.launched()
        rows = env.ps()
        assert len(rows) == 1, rows
        key = rows[0][0]
        assert key.startswith(vmm.replace("-", "") + "-")
        assert rows[0][3:5] == [vmm, str(launched["pid"])]
        r = env.cli("kill", key)
        assert r.returncode == 0, r.stderr
        assert wait_gone(launched["pid"])  # SIGKILL sent: it dies a moment later
        assert env.ps() == []
        p.stdin.write("print('after')\n\n")
        p.stdin.close()
        assert p.wait(timeout=60) == 3  # the connection is gone with the VM
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize("vmm", VMMS)
def test_the_host_ends_a_sandbox_past_its_deadline(env, vmm):
    """A 2 s lifetime and no grace: the next registry sweep (any cellvm
    command) kills the VMM."""
    p = start_shell(env, vmm, CELLVM_MAX_TIMEOUT="2", CELLVM_DEADLINE_GRACE="0")
    try:
        pid = env.launched()["pid"]
        for _ in range(120):
            env.ps()
            if wait_gone(pid, tries=10):
                break
        assert process_gone(pid)
        p.stdin.close()
        assert p.wait(timeout=60) in (0, 3)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_vmm_that_exits_at_once_fails_fast_with_its_output(env):
    r = env.cli("run", "--vmm", "firecracker", "--", "1", CELLVM_FAKE_VMM_FAIL="KVM not available")
    assert r.returncode == 3
    assert "firecracker: the VMM exited" in r.stderr and "KVM not available" in r.stderr


@pytest.mark.parametrize("vmm", VMMS)
def test_a_kernel_the_vmm_cannot_load_is_its_error(env, vmm):
    """The bzImage is QEMU's: the stand-in refuses it as the VMMs do."""
    r = env.cli("run", "--vmm", vmm, "--kernel", os.path.join(IMAGE, "vmlinuz"), "--", "1")
    assert r.returncode == 3
    assert "is not an ELF kernel" in r.stderr


def test_a_vmm_not_on_path_says_so(env):
    r = env.cli("run", "--vmm", "cloud-hypervisor", "--", "1", PATH="/usr/bin:/bin")
    assert r.returncode == 3
    assert "the `cloud-hypervisor` binary was not found on PATH" in r.stderr


def test_an_unknown_vmm_and_qemus_vsock_option_are_refused(env):
    for args, says in ((["--vmm", "bochs"], "--vmm takes qemu, firecracker or cloud-hypervisor"),
                       (["--vmm", "firecracker", "--vsock", "on"], "--vsock is QEMU's"),
                       (["--vmm", "cloud-hypervisor", "--network", "user"],
                        "--network user is QEMU's")):
        r = env.cli("run", *args, "--", "1")
        assert r.returncode == 2 and says in r.stderr, (args, r.stderr)
    assert not os.path.exists(env.log)  # nothing was launched
