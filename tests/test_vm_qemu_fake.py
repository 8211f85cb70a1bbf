"""QEMU launch paths that cannot run for real on this machine, with a test
double for QEMU (tests/fake_qemu.py) first on PATH:

- vhost-vsock: there is no /dev/vhost-vsock here, so QEMU cannot get a vsock
  device, and no guest can be reached over AF_VSOCK (this host's /dev/vsock
  is a guest-side transport: a connect to any other CID times out). What is
  checked: the command line with vsock on and off, and that a QEMU refusing
  the guest CID ("Address already in use") is started again with another
  one, at most CVM_MAX_CID_RETRIES times. Connecting over vsock is not: it can only
  time out here.
- KVM: this machine's /dev/kvm cannot run a stock guest, so the `-accel kvm
  -cpu host` command line is checked without booting (CELLVM_ACCEL=kvm).

The rest of the path is real: the C CLI `cellvm run`, and behind the fake's
serial socket a real cellvm-agent (dev mode), which runs the cell. Real boots
are in tests/test_vm_qemu.py and tests/test_cli_vm.py.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_vm_configs import make_erofs, opt  # noqa: E402
from conftest import IMAGE, build_image_or_skip, process_gone, processes_mentioning  # noqa: E402

BUILD = os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build"))
CLI = os.path.join(BUILD, "cellvm")
FAKE_QEMU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_qemu.py")


@pytest.fixture
def fake_qemu(tmp_path, monkeypatch):
    """qemu-system-x86_64 on PATH is the fake; a private, short TMPDIR (the
    CLI ignores one over 32 bytes, and socket paths are short)."""
    build_image_or_skip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    qemu = bin_dir / "qemu-system-x86_64"
    qemu.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE_QEMU} "$@"\n')
    qemu.chmod(0o755)
    tmp = tempfile.mkdtemp(prefix="cv-", dir="/tmp")
    log = tmp_path / "qemu-argv.jsonl"
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", TMPDIR=tmp,
               CELLVM_FAKE_QEMU_LOG=str(log))
    env.pop("CELLVM_ADDR", None)
    monkeypatch.setattr(tempfile, "tempdir", tmp)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    yield {"qemu": str(qemu), "tmp": tmp, "log": log, "env": env}
    left = os.listdir(tmp)
    shutil.rmtree(tmp)
    assert left == [], left
    assert processes_mentioning(tmp) == []


def launches(log):
    with open(log) as f:
        return [json.loads(line) for line in f]


def guest_cid(argv):
    devs = [d for d in opt(argv, "-device") if d.startswith("vhost-vsock-device,guest-cid=")]
    assert len(devs) == 1, devs
    return int(devs[0].rsplit("=", 1)[1])


def test_cli_run_tcg_serial_and_boot_files(fake_qemu, agent, tmp_path):
    """`cellvm run` end to end over the serial channel (vsock off), the cell
    run by a real agent behind the fake; the TCG command line; and
    --kernel/--initramfs none/--rootfs."""
    env = dict(fake_qemu["env"], CELLVM_ACCEL="tcg", CELLVM_FAKE_QEMU_AGENT=agent.sock)
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"kernel")
    erofs = make_erofs(tmp_path)
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--vsock", "off", "--kernel", str(kernel),
                        "--initramfs", "none", "--rootfs", str(erofs), "--", "6 * 7"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "42\n"
    (argv,) = launches(fake_qemu["log"])
    assert opt(argv, "-M")[0].startswith("microvm,")
    assert opt(argv, "-accel") == ["tcg"] and opt(argv, "-cpu") == ["max"]
    assert opt(argv, "-kernel") == [str(kernel)] and "-initrd" not in argv
    assert f"id=root,file={erofs},format=raw,if=none,readonly=on" in opt(argv, "-drive")
    words = opt(argv, "-append")[0].split()
    assert {"rootfstype=erofs", "root=/dev/vda", "ro",
            "init=/sbin/cellvm-init", "cellvm.mem_limit=896M"} <= set(words)
    # TCG: this host's TSC frequency (`cellvm host-tsc`: measured, or read from its
    # cache), not launch.txt's fallback of 2000000.
    (tsc,) = [int(w.split("=", 1)[1]) for w in words if w.startswith("tsc_early_khz=")]
    khz = int(subprocess.check_output([CLI, "host-tsc"], env=env, text=True))
    assert abs(tsc - khz) <= khz // 1000 and khz != 2000000, (tsc, khz)
    assert "rootfstype=ext4" not in words and " ".join(words).count("tsc_early_khz=") == 1
    assert not any(d.startswith("vhost-vsock") for d in opt(argv, "-device"))

    # The image's own files by default (and --vmm qemu, the default, said).
    os.unlink(fake_qemu["log"])
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--vmm", "qemu", "--vsock", "off", "--", "1"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (argv,) = launches(fake_qemu["log"])
    assert opt(argv, "-kernel") == [os.path.join(IMAGE, "vmlinuz")]
    assert opt(argv, "-initrd") == [os.path.join(IMAGE, "initramfs.cpio.gz")]
    assert "init=" not in opt(argv, "-append")[0]


def test_cli_run_kvm_vsock_and_cid_clashes(fake_qemu):
    env = dict(fake_qemu["env"], CELLVM_ACCEL="kvm", CELLVM_FAKE_QEMU_CID_CLASHES="2")
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--vsock", "on", "--boot-timeout", "4",
                        "--", "1"], env=env, capture_output=True, text=True, timeout=60)
    # No guest answers over vsock here: the run ends as a boot failure.
    assert r.returncode == 3, r.stderr
    assert "the agent in the VM did not answer: connect vsock:" in r.stderr
    runs = launches(fake_qemu["log"])
    cids = [guest_cid(a) for a in runs]
    assert len(cids) == 3 and len(set(cids)) == 3
    for argv in runs:
        assert opt(argv, "-accel") == ["kvm"] and opt(argv, "-cpu") == ["host"]
        assert "tsc_early_khz" not in opt(argv, "-append")[0]
        assert "virtserialport,chardev=agent,name=cellvm" in opt(argv, "-device")
    # The last CID is the one it waited on.
    assert f"connect vsock:{cids[-1]}:1024" in r.stderr


def test_cli_gives_up_after_max_cid_retries(fake_qemu):
    env = dict(fake_qemu["env"], CELLVM_ACCEL="kvm", CELLVM_FAKE_QEMU_CID_CLASHES="100")
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--vsock", "on", "--boot-timeout", "30",
                        "--", "1"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr
    assert "unable to set guest cid: Address already in use" in r.stderr, r.stderr
    # the first start and CVM_MAX_CID_RETRIES (client/c/vmm.h: 8) restarts
    assert len(launches(fake_qemu["log"])) == 9


def test_cli_rejects_bad_boot_options(fake_qemu, tmp_path):
    env = fake_qemu["env"]
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--vsock", "maybe", "--", "1"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--vsock takes auto, on or off" in r.stderr
    junk = tmp_path / "junk.img"
    junk.write_bytes(b"\0" * 8192)
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--rootfs", str(junk), "--", "1"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 3 and "neither erofs nor ext4" in r.stderr
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--kernel", str(tmp_path / "nope"), "--", "1"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--kernel" in r.stderr and "nope: No such file or directory" in r.stderr
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--network", "bridge", "--", "1"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--network takes none" in r.stderr
    r = subprocess.run([CLI, "run", "--image", str(tmp_path), "--", "1"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 3 and "make image" in r.stderr, r.stderr
    assert not os.path.exists(fake_qemu["log"])  # QEMU was never started


def test_sandbox_create_passes_its_vm_options_to_qemu(fake_qemu, agent, monkeypatch):
    """Sandbox.create(network="user", memory_mb, vcpus, vmm="qemu") reaches
    QEMU's command line; the cell runs on the real agent behind the fake,
    and kill() leaves no process or file (the fixture checks)."""
    from cellvm import Sandbox
    monkeypatch.setenv("CELLVM_FAKE_QEMU_AGENT", agent.sock)
    monkeypatch.setenv("CELLVM_ACCEL", "tcg")
    sbx = Sandbox.create(IMAGE, vmm="qemu", network="user", memory_mb=768, vcpus=2, boot_timeout=60)
    try:
        assert sbx.run_code("6 * 7").text == "42"
        pid = sbx.vmm_pid
    finally:
        sbx.kill()
    assert process_gone(pid)
    (argv,) = launches(fake_qemu["log"])
    assert opt(argv, "-m") == ["768"] and opt(argv, "-smp") == ["2"]
    assert any(d.startswith("virtio-net-device") for d in opt(argv, "-device"))
    assert any(n.startswith("user,") for n in opt(argv, "-netdev"))
    words = opt(argv, "-append")[0].split()
    assert "cellvm.net=static" in words and "cellvm.mem_limit=640M" in words
