"""`cellvm snapshot` without a VM: the manifest and name of a launch's template
(docs/SNAPSHOTS.md: the options in its fields and QEMU arguments, the name
the FNV-1a of those arguments; several launches), `check` says what differs
or is wrong, `--snapshot DIR` refuses a damaged or foreign template before
starting anything, `list` and `remove` manage the store, and the options say
what is wrong with them. Templates here are the manifest `cellvm snapshot
manifest` prints with sparse stand-in files for the state and memory:
nothing in this file boots a VM (tests/test_cli_snapshot_vm.py does).
"""

import copy
import fcntl
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import IMAGE, CliLaunch, build_image_or_skip, processes_mentioning  # noqa: E402

BUILD = os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build"))
CLI = os.path.abspath(os.path.join(BUILD, "cellvm"))
TSC_KHZ = "2100000"  # a fixed frequency: the same command line on any host


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A private template root, runtime dir and TMPDIR for the CLI and for this process."""
    build_image_or_skip()
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("no qemu-system-x86_64 (a manifest names its version)")
    env = dict(os.environ)
    for name, sub in (("CELLVM_TEMPLATE_DIR", "templates"), ("CELLVM_RUNTIME_DIR", "run"),
                      ("TMPDIR", "tmp")):
        (tmp_path / sub).mkdir(mode=0o700)
        env[name] = str(tmp_path / sub)
        monkeypatch.setenv(name, str(tmp_path / sub))
    env["CELLVM_TSC_KHZ"] = TSC_KHZ
    monkeypatch.setenv("CELLVM_TSC_KHZ", TSC_KHZ)
    env.pop("CELLVM_SNAPSHOT", None)
    env.pop("CELLVM_ADDR", None)
    return tmp_path, env


def cli(env, *args, cwd=None, timeout=60):
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=cwd)


def py_launch():
    """The default launch of the image (`cellvm snapshot manifest`)."""
    return CliLaunch(IMAGE)


def file_path(m, role):
    """The path of `file` line `role` ("<role> <size> <mtime_ns> <path>"), or None."""
    for line in m.file:
        words = line.split(" ", 3)
        if words[0] == role:
            return words[3]
    return None


LAUNCHES = [
    ([], {}),
    (["--memory", "768", "--vcpus", "2"], {"memory_mb": 768, "vcpus": 2}),
    (["--memory-mb", "2048"], {"memory_mb": 2048}),
    (["--initramfs", "none"], {"initramfs": None}),
    (["--rootfs", os.path.join(IMAGE, "rootfs.erofs")],
     {"rootfs": os.path.join(IMAGE, "rootfs.erofs")}),
    (["--kernel", os.path.join(IMAGE, "vmlinuz")], {"kernel": os.path.join(IMAGE, "vmlinuz")}),
]


@pytest.mark.parametrize("args,kw", LAUNCHES, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_manifest_and_name_say_the_launch(store, args, kw):
    import snapshot_format as snap
    tmp, env = store
    if "rootfs" in kw and not os.path.exists(kw["rootfs"]):
        pytest.skip("no rootfs.erofs in this image")
    r = cli(env, "snapshot", "manifest", "--image", IMAGE, *args)
    assert r.returncode == 0, r.stderr
    first, text = r.stdout.split("\n", 1)
    m = snap.Manifest.from_text(text, "stdout")
    assert m.to_text() == text  # every line a field of the format, in its order
    assert (m.kind, m.vmm, m.image, m.state, m.memory) == ("template", "qemu", IMAGE, "state", "memory")
    mem, vcpus = kw.get("memory_mb", 1024), kw.get("vcpus", 1)
    assert (m.memory_mb, m.vcpus, m.memory_size) == (mem, vcpus, mem << 20)
    version = subprocess.run([m.arg[0], "--version"], capture_output=True, text=True, timeout=60)
    assert m.arg[0] == "qemu-system-x86_64" and m.vmm_version == version.stdout.split("\n")[0]
    assert m.arg[m.arg.index("-m") + 1] == str(mem) and m.arg[m.arg.index("-smp") + 1] == str(vcpus)
    words = m.cmdline.split()
    assert f"tsc_early_khz={TSC_KHZ}" in words and "console=ttyS0" in words
    assert f"cellvm.mem_limit={mem - max(128, mem // 8)}M" in words
    assert file_path(m, "kernel") == kw.get("kernel", os.path.join(IMAGE, "vmlinuz"))
    rootfs = kw.get("rootfs", os.path.join(IMAGE, "rootfs.ext4"))
    assert file_path(m, "rootfs") == rootfs
    assert f"rootfstype={'erofs' if rootfs.endswith('.erofs') else 'ext4'}" in words
    if "initramfs" in kw:
        assert file_path(m, "initramfs") is None and "init=/sbin/cellvm-init" in words
    else:
        assert file_path(m, "initramfs") == os.path.join(IMAGE, "initramfs.cpio.gz")
    for line in m.file:  # "<role> <size> <mtime_ns> <path>": the file as it is
        _, size, mtime, path = line.split(" ", 3)
        st = os.stat(path)
        assert (int(size), int(mtime)) == (st.st_size, st.st_mtime_ns)
    # The name: FNV-1a of the arguments, request, command line, size and files (docs/SNAPSHOTS.md).
    words = m.arg + m.request + [m.cmdline, str(m.memory_mb), str(m.vcpus)]
    name = snap.template_name("qemu", words + [f.split(" ", 3)[3] for f in m.file])
    assert first == "# " + os.path.join(str(tmp / "templates"), name)
    # A relative image path is the same launch (absolute paths in the manifest).
    rel = os.path.relpath(IMAGE, str(tmp))
    r2 = cli(env, "snapshot", "manifest", "--image", rel, *args, cwd=str(tmp))
    assert r2.returncode == 0 and r2.stdout == r.stdout


def fake_template(launch, root, state=b"QEVM\x00\x00\x00\x03" + b"\0" * 56, kind="template"):
    """The Python SDK's template layout for `launch`, with stand-in state and
    memory files (sparse): what check and --snapshot look at before any VM."""
    import snapshot_format as snap
    td = snap.TemplateDir(launch.name, root)
    with td.build_lock():
        tmp = td.new_snapshot_dir()
        with open(os.path.join(tmp, "state"), "wb") as f:
            f.write(state)
        with open(os.path.join(tmp, "memory"), "wb") as f:
            f.truncate(launch.want.memory_size)
        m = copy.deepcopy(launch.want)
        m.kind = kind
        m.state_size = len(state)
        m.generation = 7
        snap.write_atomic(os.path.join(tmp, "manifest"), m.to_text().encode())
        return td, td.publish(tmp)


def test_check_says_what_differs_or_is_wrong(store):
    tmp, env = store
    root = str(tmp / "templates")
    r = cli(env, "snapshot", "check", "--image", IMAGE)
    assert r.returncode == 1 and r.stdout.endswith("no template built yet (create builds one)\n")
    td, snapdir = fake_template(py_launch(), root)
    r = cli(env, "snapshot", "check", "--image", IMAGE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == f"{snapdir}: fits this launch\n"
    # A changed field of the manifest: named, with both values.
    manifest = os.path.join(snapdir, "manifest")
    text = open(manifest).read()
    with open(manifest, "w") as f:
        f.write(text.replace("memory_mb=1024\n", "memory_mb=2048\n"))
    r = cli(env, "snapshot", "check", "--image", IMAGE)
    assert r.returncode == 1
    assert r.stdout == f"{td.path}: memory_mb: snapshot has 2048, now 1024\n"
    # A command line that differs past its first 150 characters: both shown
    # from a little before the difference.
    line = next(x for x in text.splitlines() if x.startswith("cmdline="))
    with open(manifest, "w") as f:
        f.write(text.replace(line, line + " cellvm.extra_for_the_test=1"))
    r = cli(env, "snapshot", "check", "--image", IMAGE)
    assert r.returncode == 1 and "cmdline: snapshot has ...'" in r.stdout, r.stdout
    assert "cellvm.extra_for_the_test=1" in r.stdout, r.stdout
    with open(manifest, "w") as f:
        f.write(text)
    # A rebuilt boot file (another mtime).
    st = os.stat(os.path.join(IMAGE, "vmlinuz"))
    kernel_line = f"kernel {st.st_size} {st.st_mtime_ns} "
    with open(manifest, "w") as f:
        f.write(text.replace(kernel_line, f"kernel {st.st_size} {st.st_mtime_ns - 1} "))
    r = cli(env, "snapshot", "check", "--image", IMAGE)
    assert r.returncode == 1 and "kernel file: snapshot was taken with '" in r.stdout
    assert "(size mtime_ns path), now '" in r.stdout
    with open(manifest, "w") as f:
        f.write(text)
    # A truncated state.
    with open(os.path.join(snapdir, "state"), "r+b") as f:
        f.truncate(10)
    r = cli(env, "snapshot", "check", "--image", IMAGE)
    assert r.returncode == 1
    assert r.stdout == (f"{td.path}: {snapdir}/state is 10 bytes, its manifest says 64: "
                        "truncated or replaced\n")


def test_explicit_snapshot_is_checked_before_anything_starts(store):
    tmp, env = store
    root = str(tmp / "templates")
    launch = py_launch()
    td, snapdir = fake_template(launch, root, state=b"NOTQEMU!" + b"\0" * 56)
    r = cli(env, "run", "--image", IMAGE, "--snapshot", td.path, "--", "1")
    assert r.returncode == 3
    assert r.stderr == (f"cellvm: snapshot {td.path}: {snapdir}/state is not a QEMU migration "
                        "stream (no QEVM v3 header: starts with 0x4e4f5451454d5521): a foreign or "
                        "damaged snapshot\n")
    # One snapshot directory named directly, a paused record, a foreign directory.
    shutil.rmtree(td.path)
    td, snapdir = fake_template(launch, root, kind="paused")
    r = cli(env, "run", "--image", IMAGE, "--snapshot", snapdir, "--", "1")
    assert r.returncode == 3 and f"{snapdir}/manifest: a paused snapshot, not a template" in r.stderr
    r = cli(env, "run", "--image", IMAGE, "--snapshot", str(tmp), "--", "1")
    assert r.returncode == 3 and f"{tmp}/manifest not found: not a complete snapshot" in r.stderr
    shutil.rmtree(td.path)
    td, snapdir = fake_template(launch, root)
    r = cli(env, "shell", "--image", IMAGE, "--memory", "768", "--snapshot", snapdir)
    assert r.returncode == 3
    assert "this template does not fit this launch: memory_mb: snapshot has 1024, now 768" in r.stderr
    assert processes_mentioning(str(tmp)) == []
    assert os.listdir(str(tmp / "tmp")) == []


def test_list_and_remove(store):
    tmp, env = store
    root = str(tmp / "templates")
    r = cli(env, "snapshot", "list")
    assert r.returncode == 0 and r.stdout == f"no templates in {root}\n"
    td, snapdir = fake_template(py_launch(), root)
    r = cli(env, "snapshot", "list")
    assert r.returncode == 0
    assert r.stdout == (f"{td.name}  qemu 1024 MiB 1 vCPU  {IMAGE}  state 0 KiB, memory 0 MiB used"
                        f"  {os.path.basename(snapdir)}\n")
    os.mkdir(os.path.join(root, "qemu-0000000000000000"), 0o700)
    r = cli(env, "snapshot", "list")
    assert "qemu-0000000000000000  (no complete snapshot)\n" in r.stdout
    # A snapshot a restore holds (LOCK_SH) is left, and said so.
    fd = os.open(snapdir, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_SH)
    r = cli(env, "snapshot", "remove", td.name)
    assert r.returncode == 1
    assert r.stderr == f"cellvm: {td.name}: {os.path.basename(snapdir)} in use by a restore: left\n"
    os.close(fd)
    r = cli(env, "snapshot", "remove", "--all")
    assert r.returncode == 0
    assert r.stdout == f"qemu-0000000000000000: removed\n{td.name}: removed\n"
    assert os.listdir(root) == []
    r = cli(env, "snapshot", "remove", "qemu-1")
    assert r.returncode == 1 and r.stderr == f"cellvm: qemu-1: no such template in {root}\n"
    r = cli(env, "snapshot", "remove")
    assert r.returncode == 2


def test_usage(store):
    tmp, env = store
    r = cli(env, "snapshot", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: cellvm snapshot COMMAND")
    for args in (["snapshot"], ["snapshot", "bogus"], ["snapshot", "create", "-e", "A=1"],
                 ["snapshot", "check", "--force"], ["snapshot", "list", "x"],
                 ["snapshot", "manifest", "extra"], ["run", "--force", "--", "1"]):
        r = cli(env, *args)
        assert r.returncode == 2, (args, r.stderr)
    r = cli(dict(env, CELLVM_SNAPSHOT="sometimes"), "run", "--image", IMAGE, "--", "1")
    assert r.returncode == 2
    assert r.stderr == "cellvm: $CELLVM_SNAPSHOT=sometimes: expected 0/off or 1/on\n"
    # An option says it: the variable is not read (here: no image, so nothing starts).
    r = cli(dict(env, CELLVM_SNAPSHOT="sometimes"), "run", "--no-snapshot", "--image",
            str(tmp / "no-image"), "--", "1")
    assert r.returncode == 2 and "no-image: No such file or directory" in r.stderr  # a bad option value
    # Off: the template store is not even looked at.
    r = cli(dict(env, CELLVM_SNAPSHOT="0", CELLVM_TEMPLATE_DIR="/proc/no/such"), "run",
            "--image", str(tmp / "no-image"), "--", "1")
    assert r.returncode == 2 and "template" not in r.stderr
    r = cli(env, "--help")
    assert "--no-snapshot" in r.stdout and "snapshot create|check|manifest" in r.stdout
