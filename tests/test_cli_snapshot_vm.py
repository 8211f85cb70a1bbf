"""Templates of the C CLI with real QEMU booting the real image
(docs/SNAPSHOTS.md): `cellvm snapshot create` builds one, `cellvm run` and
`cellvm shell` restore it (each clone with its own random state, in the
registry while it runs), the Python SDK restores the CLI's template and the
CLI the Python SDK's (the session's, conftest.vm_template), a stale template
is rebuilt on use, one QEMU cannot restore gives a warning and a cold boot,
and nothing is left behind: no process, temp directory, registry entry or
shared-memory file.

VM time is precious: the file boots three times (the CLI's template, its
rebuild once stale, the cold fallback) plus the session template if no other
test built it; every restore costs well under a second. The tests run in
order on one template root (the module's `store`).
"""

import glob
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import CLONE_VALUES, IMAGE, build_image_or_skip, processes_mentioning  # noqa: E402

BUILD = os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build"))
CLI = os.path.abspath(os.path.join(BUILD, "cellvm"))
RESTORED = "[cellvm: VM restored in "
BUILDING = "cellvm: building the template "
# random.random(), numpy.random.rand(), os.urandom(16), uuid4: no two clones share them.
VALUES = CLONE_VALUES.replace("json.dumps(", "print(json.dumps(") + ")"


class Store:
    """A private template root, runtime dir (registry) and TMPDIR for the CLI,
    and the environment of this process for the Python SDK's side."""

    def __init__(self, tmp):
        import registry_view
        self.tmp = tmp
        self.root = os.path.join(tmp, "templates")
        self.run = os.path.join(tmp, "run")
        for d in (self.root, self.run):
            os.mkdir(d, 0o700)
        # Short: the CLI makes its VM directories in $TMPDIR only up to 32 characters.
        self.tmpdir = tempfile.mkdtemp(prefix="cellvm-t-", dir="/tmp")
        r = registry_view.cli("host-tsc")  # the same command line for both clients (this host's TSC)
        khz = int(r.stdout) if r.returncode == 0 else None
        self.env = dict(os.environ, CELLVM_TEMPLATE_DIR=self.root, CELLVM_RUNTIME_DIR=self.run,
                        TMPDIR=self.tmpdir)
        if khz:
            self.env["CELLVM_TSC_KHZ"] = str(khz)
        self.env.pop("CELLVM_SNAPSHOT", None)  # conftest boots the suite cold; the CLI's default
        self.env.pop("CELLVM_ADDR", None)

    def cli(self, *args, env=None, timeout=600, **kw):
        return subprocess.run([CLI, *args], env=env or self.env, capture_output=True, text=True,
                              timeout=timeout, **kw)

    def template_dirs(self):
        return sorted(glob.glob(os.path.join(self.root, "qemu-*", "t-*")))

    def assert_nothing_left(self, shm_before):
        assert glob.glob(os.path.join(self.tmpdir, "cellvm-*")) == []  # temp dirs, sockets
        assert processes_mentioning(self.tmpdir) == []                  # QEMU
        assert glob.glob(os.path.join(self.run, "*.sandbox")) == []     # registry entries
        assert shm() <= shm_before                                      # shared memory
        assert glob.glob(os.path.join(self.root, "qemu-*", "t-*.tmp")) == []


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    build_image_or_skip()
    s = Store(str(tmp_path_factory.mktemp("cli-snap")))
    yield s
    shutil.rmtree(s.tmpdir, ignore_errors=True)


def shm():
    """cellvm's or QEMU's files in /dev/shm (other work on the machine may make its own)."""
    return {n for n in os.listdir("/dev/shm") if "cellvm" in n or "qemu" in n}


def run_values(store, *extra):
    r = store.cli("run", "-v", "--image", IMAGE, *extra, "--", VALUES)
    assert r.returncode == 0, r.stderr
    return r, json.loads(r.stdout)


def test_create_then_run_and_shell_restore(store):
    before = shm()
    r = store.cli("snapshot", "create", "--image", IMAGE)
    assert r.returncode == 0, r.stderr
    assert BUILDING in r.stderr and "the guest is ready after" in r.stderr
    assert "cellvm: the template's guest settled in " in r.stderr  # saved idle (vmm_idle.c)
    (snapdir,) = store.template_dirs()
    assert r.stdout.startswith(f"{snapdir}: built in ")
    m = open(os.path.join(snapdir, "manifest")).read()
    assert "\nkind=template\n" in m and "\nmemory=memory\n" in m
    r = store.cli("snapshot", "create", "--image", IMAGE)
    assert r.returncode == 0 and r.stdout == f"{snapdir}: up to date (use --force to build it again)\n"
    r = store.cli("snapshot", "check", "--image", IMAGE)
    assert r.returncode == 0 and r.stdout == f"{snapdir}: fits this launch\n"

    # Two runs: restored (said, and no build), each with its own random state.
    r1, a = run_values(store)
    r2, b = run_values(store)
    for r in (r1, r2):
        assert RESTORED in r.stderr and f" from {snapdir} (" in r.stderr
        assert BUILDING not in r.stderr and "booting cold" not in r.stderr
    assert all(x != y for x, y in zip(a, b)), (a, b)
    assert store.template_dirs() == [snapdir]  # the template is untouched
    store.assert_nothing_left(before)

    # A restored shell is in the registry while it runs, with its own deadline.
    p = subprocess.Popen([CLI, "shell", "--image", IMAGE], env=store.env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        p.stdin.write("x = 6 * 7\nx\n\n")
        p.stdin.flush()
        assert p.stdout.readline() == "42\n"
        ps = store.cli("ps")
        assert ps.returncode == 0 and len(ps.stdout.splitlines()) == 2, ps.stdout
        row = ps.stdout.splitlines()[1].split()
        # a VM's sandbox id is its registry key, in both columns
        assert " running " in ps.stdout and re.fullmatch(r"qemu-[0-9a-f]{8}", row[0]), ps.stdout
        assert row[-1] == row[0], ps.stdout
        out, err = p.communicate("print(x + 1)\n", timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert out == "43\n" and RESTORED in err
    store.assert_nothing_left(before)


def test_the_python_sdk_restores_the_cli_template(store, caplog, monkeypatch):
    from cellvm import Sandbox
    for name in ("CELLVM_TEMPLATE_DIR", "CELLVM_RUNTIME_DIR", "TMPDIR", "CELLVM_TSC_KHZ"):
        if name in store.env:
            monkeypatch.setenv(name, store.env[name])
    monkeypatch.setattr("tempfile.tempdir", None)  # TMPDIR is read again
    (snapdir,) = store.template_dirs()
    before = shm()
    caplog.set_level(logging.WARNING)
    sbx = Sandbox.create(IMAGE, snapshot=True)
    try:
        assert sbx._snapshot_dir == snapdir
        assert sbx.restore_report is not None
        assert sbx.run_code("6 * 7").text == "42"
    finally:
        sbx.kill()
    assert "building the template" not in caplog.text and "booting cold" not in caplog.text
    store.assert_nothing_left(before)


def test_the_cli_restores_the_session_template(store, vm_template):
    """The session's template (conftest, `cellvm snapshot create`): `cellvm
    run` of the same image and size is that template's, and is restored from it."""
    root = os.path.dirname(vm_template.tdir.path)
    cmdline = vm_template.manifest.cmdline.split()
    khz = [w.split("=", 1)[1] for w in cmdline if w.startswith("tsc_early_khz=")]
    env = dict(store.env, CELLVM_TEMPLATE_DIR=root)
    if khz:
        env["CELLVM_TSC_KHZ"] = khz[0]
    args = ("--image", IMAGE, "--memory", str(vm_template.manifest.memory_mb))
    r = store.cli("snapshot", "check", *args, env=env)
    assert r.returncode == 0 and r.stdout == f"{vm_template.snapdir}: fits this launch\n"
    before = shm()
    r = store.cli("run", "-v", *args, "--", VALUES, env=env)
    assert r.returncode == 0, r.stderr
    assert f"{RESTORED}" in r.stderr and f" from {vm_template.snapdir} (" in r.stderr
    assert BUILDING not in r.stderr
    assert len(json.loads(r.stdout)) == 4
    store.assert_nothing_left(before)


def test_a_stale_template_is_rebuilt_on_use(store):
    """A truncated state (or any other change: the image rebuilt, another QEMU)
    makes the template stale: run says what is wrong, builds it anew, restores."""
    (old,) = store.template_dirs()
    state = os.path.join(old, "state")
    size = os.path.getsize(state)
    with open(state, "r+b") as f:
        f.truncate(size // 2)
    before = shm()
    r = store.cli("run", "-v", "--image", IMAGE, "--", "6 * 7")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "42\n"
    assert (f"is stale: {state} is {size // 2} bytes, its manifest says {size}: truncated or "
            "replaced: building it anew") in r.stderr
    assert BUILDING in r.stderr and RESTORED in r.stderr
    (new,) = store.template_dirs()  # the old snapshot was removed by the build
    assert new != old
    store.assert_nothing_left(before)


def test_a_template_qemu_cannot_restore_gives_a_warning_and_a_cold_boot(store):
    (snapdir,) = store.template_dirs()
    state = os.path.join(snapdir, "state")
    with open(state, "r+b") as f:  # the header stays: QEMU itself refuses the stream
        f.seek(8)
        f.write(b"\xff" * 4096)
    before = shm()
    r = store.cli("run", "-v", "--image", IMAGE, "--", "6 * 7")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "42\n"
    assert (f"cellvm: the template {snapdir} did not restore ({state}: QEMU could not restore "
            "it: qemu-system-x86_64: ") in r.stderr
    assert "; removed, the next run builds it anew: booting cold\n" in r.stderr
    assert RESTORED not in r.stderr and "[cellvm: VM up in " in r.stderr
    assert store.template_dirs() == []
    r = store.cli("snapshot", "check", "--image", IMAGE)
    assert r.returncode == 1 and "no template built yet" in r.stdout
    store.assert_nothing_left(before)
    r = store.cli("snapshot", "remove", "--all")
    assert r.returncode == 0 and os.listdir(store.root) == []
