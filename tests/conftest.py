"""Shared fixtures: a real cellvm-agent process listening on a Unix socket.

CELLVM_BUILD selects the build directory (default build/; build/san for the
sanitizer build). The agent runs with the real executor and Debian's CPython.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

# A suite started as a shell's background job (`.ci/run &`, nohup) inherits
# SIGINT ignored, and Python then installs no KeyboardInterrupt handler: the
# tests that interrupt the client with SIGINT need it.
signal.signal(signal.SIGINT, signal.default_int_handler)

# Sandboxes of the suite live as long as its session VM may need (E2B's
# default of 300 s would end it mid-run); tests of the lifetime pass their own.
os.environ.setdefault("CELLVM_DEFAULT_TIMEOUT", str(6 * 3600))
# The suites boot cold unless a test asks for a template (test_snapshot*.py:
# one template per session, vm_template below); a template build
# per distinct launch of the other suites would cost ~20 s each.
os.environ.setdefault("CELLVM_SNAPSHOT", "0")

# Under pytest-xdist (tests/run: two workers), each worker has its own registry
# of live VMs and its own paused store: Sandbox.list(), the sandbox limit and
# the leak checks of one worker never see the other's VMs. Templates stay
# shared (their builds take a lock).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if XDIST_WORKER:
    _WORKER_DIR = tempfile.mkdtemp(prefix=f"cellvm-{XDIST_WORKER}-", dir="/tmp")
    os.environ.setdefault("CELLVM_RUNTIME_DIR", os.path.join(_WORKER_DIR, "run"))
    os.environ.setdefault("CELLVM_PAUSED_DIR", os.path.join(_WORKER_DIR, "paused"))
    os.environ.setdefault("CELLVM_SNAPSHOTS_DIR", os.path.join(_WORKER_DIR, "snapshots"))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from agent_process import AGENT, BUILD, AgentProcess  # noqa: E402,F401

FIXTURES = os.path.join(os.path.dirname(ROOT), "shared", "fixtures")


@pytest.fixture(scope="session")
def agent():
    """One agent for the session, with the default preloads (numpy, pandas, matplotlib)."""
    a = AgentProcess()
    yield a
    a.stop()
    assert a.sanitizer_report() is None, a.sanitizer_report()


@pytest.fixture
def fresh_agent():
    """A private agent for tests that hurt it or need a clean state; no preloads."""
    a = AgentProcess(preload="")
    yield a
    a.stop()
    assert a.sanitizer_report() is None, a.sanitizer_report()


@pytest.fixture
def fixtures_dir():
    return FIXTURES


@pytest.fixture
def workdir(agent, request):
    """A directory of this test's own in the session agent's workdir, owned by
    the sandbox user (test module and test name: nothing is shared)."""
    d = os.path.join(agent.workdir, f"{request.module.__name__}-{request.node.name}")
    os.makedirs(d, exist_ok=True)
    return agent.give_to_sandbox_user(d)


@pytest.fixture
def sbx(agent):
    """An SDK Sandbox on the session's agent."""
    from cellvm import Sandbox
    with Sandbox.connect(agent.addr) as s:
        yield s


@pytest.fixture
def ctx(sbx):
    """A context of its own, so execution counts and names start clean; a test
    may remove it itself."""
    from cellvm import NotFoundException
    c = sbx.create_code_context()
    yield c
    try:
        sbx.remove_code_context(c)
    except NotFoundException:
        pass


def run_e2b_program(agent, tmp_path, source, name):
    """Runs `source`, an E2B program, imports and all, with /usr/bin/python3
    against `agent` (dev mode): client/python/compat gives it E2B's module
    names and $CELLVM_ADDR the sandbox; $E2B_PROGRAM_DIR is a directory of
    the sandbox user's for it. Returns the CompletedProcess (text)."""
    work = os.path.join(agent.workdir, name)
    os.makedirs(work, exist_ok=True)
    agent.give_to_sandbox_user(work)
    prog = tmp_path / "program.py"
    prog.write_text(source)
    env = dict(os.environ, CELLVM_ADDR=agent.addr, E2B_PROGRAM_DIR=work,
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "client", "python"),
                                           os.path.join(ROOT, "client", "python", "compat")]))
    return subprocess.run([sys.executable, str(prog)], env=env, capture_output=True, text=True,
                          timeout=120)


# --- the session's micro-VM --------------------------------------------------
# One QEMU boot of build/image serves test_vm_e2e, test_vm_qemu and
# test_sdk_create's boot checks (under TCG a boot with the zygote's preloads
# is ~18 s). Tests marked `ends_session_vm(N)` run after every other test, in
# the order of N: they close its client or stop it.

# $CELLVM_IMAGE (as the SDK and the CLI take it) selects another image: the
# image/ of a `make B=DIR image` build dir, built here as `make B=DIR image`
# (DIR also holds the binaries and the layer cache), or any directory with a
# manifest.json, used as it is.
IMAGE = os.path.abspath(os.environ.get("CELLVM_IMAGE") or os.path.join(ROOT, "build", "image"))
IMAGE_BUILD = os.path.dirname(IMAGE)
# The test boot's agent: a wrapper that first starts the vsock self-test
# (image-build/guest/), with local vsock peers allowed for it.
SELFTEST_CMDLINE = 'cellvm.agent=/usr/lib/cellvm/agent-selftest cellvm.agent_args="--allow-local-vsock"'
BOOT_TIMEOUT = 180  # to the agent's HELLO; under TCG it comes after ~4 s
FIRST_RUN_TIMEOUT = 300  # the zygote's preloads take ~15 s under TCG
SESSION_VM_MEMORY_MB = 1024
SESSION_VM_ENVS = {"CELLVM_E2E": "sandbox-wide"}

_image_built = False


def build_image_or_skip():
    """`make image` once per session (incremental); skip where it cannot work.
    CELLVM_SKIP_IMAGE_BUILD=1 uses the image ($CELLVM_IMAGE, else build/image)
    as it is (while iterating)."""
    global _image_built
    if _image_built:
        return
    if os.environ.get("CELLVM_SKIP_IMAGE_BUILD") == "1":
        if not os.path.exists(os.path.join(IMAGE, "manifest.json")):
            pytest.skip(f"CELLVM_SKIP_IMAGE_BUILD=1 and no {IMAGE}/manifest.json")
        return
    import shutil
    missing = [t for t in ("mmdebstrap", "qemu-system-x86_64", "mkfs.ext4", "depmod")
               if shutil.which(t) is None]
    if missing:
        if os.path.exists(os.path.join(IMAGE, "manifest.json")) and "qemu-system-x86_64" not in missing:
            return
        pytest.skip(f"cannot build or boot the image here: {', '.join(missing)} not installed")
    if os.path.basename(IMAGE) != "image":  # not a build dir's: nothing to make
        if not os.path.exists(os.path.join(IMAGE, "manifest.json")):
            pytest.skip(f"$CELLVM_IMAGE={IMAGE} holds no manifest.json")
        _image_built = True
        return
    if os.geteuid() != 0 and not os.path.exists(os.path.join(IMAGE, "manifest.json")):
        pytest.skip("building the image needs root (mmdebstrap, file ownership in the rootfs)")
    b = os.path.relpath(IMAGE_BUILD, ROOT)
    r = subprocess.run(["make", "-C", ROOT, f"B={IMAGE_BUILD if b.startswith('..') else b}", "image"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
    if r.returncode != 0:
        pytest.fail("make image failed:\n" + r.stdout[-4000:])
    _image_built = True


def _cmdlines():
    """(pid, argv as NUL-separated bytes) of every process now."""
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    yield int(p), f.read()
            except OSError:
                pass


def processes_mentioning(text):
    """The pids whose command line contains `text` (a temp dir left in use, say)."""
    return [pid for pid, cmd in _cmdlines() if text.encode() in cmd]


def qemu_pids():
    """The pids of the QEMU processes running now; under pytest-xdist, those of
    this worker only (the other worker's VMs come and go meanwhile): QEMU
    inherits the environment, PYTEST_XDIST_WORKER included."""
    pids = {pid for pid, cmd in _cmdlines() if b"qemu-system" in cmd.split(b"\0")[0]}
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return pids if worker is None else {p for p in pids if _in_worker(p, worker)}


def _in_worker(pid, worker):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"PYTEST_XDIST_WORKER={worker}".encode() in f.read().split(b"\0")
    except OSError:
        return False


def process_gone(pid):
    """The process no longer runs: exited (a zombie) or reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture(scope="session")
def vm_sandbox():
    """Sandbox.create() of build/image, as a user calls it; `.created_after`
    is how long create() took, `.first_cell_s` how long a first cell took (in
    a context of its own: the default one stays untouched for the tests)."""
    build_image_or_skip()
    from cellvm import Sandbox
    t0 = time.monotonic()
    s = Sandbox.create(IMAGE, memory_mb=SESSION_VM_MEMORY_MB, envs=SESSION_VM_ENVS,
                       boot_timeout=FIRST_RUN_TIMEOUT, request_timeout=60,
                       extra_cmdline=SELFTEST_CMDLINE)
    try:
        s.created_after = time.monotonic() - t0
        t1 = time.monotonic()
        ctx = s.create_code_context()
        first = s.run_code("import numpy, pandas, matplotlib\nnumpy.arange(4).sum()", context=ctx,
                           timeout=60)
        s.first_cell_s = time.monotonic() - t1
        assert first.text == "6", first
        s.remove_code_context(ctx)
        yield s
    finally:
        s.kill()


def pytest_configure(config):
    config.addinivalue_line("markers", "ends_session_vm(order): runs after every other test "
                                       "(it closes or stops the session's micro-VM)")
    # E2B's, on the tests of its suite test_vm_e2e runs (E2B_DEBUG is never set here)
    config.addinivalue_line("markers", "skip_debug: E2B's: skipped when E2B_DEBUG is set")
    config.addinivalue_line("markers", "reference: compares cellvm with a reference "
                                       "implementation (ipykernel, E2B's own tests); "
                                       "tests/conformance/run-reference runs these, tests/run the rest")


# The modules that share the session's VM (vm_sandbox) run on one xdist
# worker, in one group, so that its ends_session_vm tests come after all of
# theirs; so do the pod image's. Every other module is a group of its own
# (its module fixtures built once). tests/run passes --dist loadgroup.
SESSION_VM_MODULES = {"test_async_sandbox", "test_image", "test_sdk_e2b_api", "test_vm_clock",
                      "test_vm_e2e", "test_vm_qemu", "test_sdk_e2b_surface_additions"}
# The pod image's modules (tests/oci_pod.py): one build, one template volume,
# and its removal at the session's end, all in one worker.
POD_IMAGE_MODULES = {"test_oci", "test_kube_backend"}


@pytest.hookimpl(tryfirst=True)  # before xdist's worker names the groups
def pytest_collection_modifyitems(config, items):
    def last(item):
        m = item.get_closest_marker("ends_session_vm")
        return (1, m.args[0]) if m else (0, 0)
    items.sort(key=last)  # stable: the rest keeps its order
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            module = getattr(getattr(item, "module", None), "__name__", "")
            group = ("session_vm" if module in SESSION_VM_MODULES else
                     "pod_image" if module in POD_IMAGE_MODULES else item.nodeid.split("::")[0])
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_sessionfinish(session, exitstatus):
    if XDIST_WORKER:
        import shutil
        shutil.rmtree(_WORKER_DIR, ignore_errors=True)


# --- the session's template (tests/test_snapshot_vm.py) ------------------------
# One template of build/image per session, built fresh (~25 s under TCG) by
# `cellvm snapshot create` (client/c/snapshot_qemu.c, what every create()
# restores) into a private template root; clones of it cost ~0.3 s each.

SNAPSHOT_MEMORY_MB = 1024
CLONE_VALUES = ("import json, os, random, uuid, numpy\n"
                "json.dumps([random.random(), float(numpy.random.rand()), os.urandom(16).hex(), "
                "str(uuid.uuid4())])")
CLI = os.path.join(os.path.dirname(IMAGE), "cellvm")


def run_cell(conn, code, timeout=120):
    """The text/plain result of `code` run over a raw _wire.Connection (the
    default context); raises on an error."""
    from cellvm import _wire
    req = conn.request(_wire.EXECUTE, {"code": code})
    result, error = None, None
    for t, body in req.messages(timeout=timeout):
        if t == _wire.RESULT:
            result = body["data"].get("text/plain")
        elif t == _wire.EXEC_ERROR:
            error = body
        elif t == _wire.ERROR:
            raise RuntimeError(f"{body.get('code')}: {body.get('message')}")
    if error:
        raise RuntimeError(f"{error.get('name')}: {error.get('value')}")
    return result


def vm_args(image=IMAGE, memory_mb=None, vmm=None, vcpus=None, extra=()):
    """cellvm's vm options for a launch."""
    args = ["--image", str(image)]
    if memory_mb is not None:
        args += ["--memory", str(memory_mb)]
    if vmm is not None:
        args += ["--vmm", vmm]
    if vcpus is not None:
        args += ["--vcpus", str(vcpus)]
    return args + list(extra)


class CliLaunch:
    """A launch as `cellvm snapshot manifest` sees it: `name`, its template's
    directory name, and `want`, the manifest (snapshot_format.Manifest) a
    template of it has (what `cellvm snapshot check` compares)."""

    def __init__(self, image=IMAGE, memory_mb=None, vmm=None, vcpus=None, extra=()):
        import snapshot_format as snapshot
        self.args = vm_args(image, memory_mb, vmm, vcpus, extra)
        r = subprocess.run([CLI, "snapshot", "manifest", *self.args],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        head, _, text = r.stdout.partition("\n")
        assert head.startswith("# "), r.stdout[:200]
        self.name = os.path.basename(head[2:])
        self.want = snapshot.Manifest.from_text(text, head[2:])

    def check(self, root):
        """`cellvm snapshot check` of this launch under template root `root`:
        (snapshot dir or None, what it says)."""
        r = subprocess.run([CLI, "snapshot", "check", *self.args], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, CELLVM_TEMPLATE_DIR=str(root)))
        out = (r.stdout + r.stderr).strip()
        if r.returncode == 0 and out.endswith(": fits this launch"):
            return out[:-len(": fits this launch")], out
        return None, out


class Template:
    def __init__(self, launch, tdir, snapdir, manifest):
        self.launch, self.tdir, self.snapdir, self.manifest = launch, tdir, snapdir, manifest


@pytest.fixture(scope="session")
def vm_template():
    """The session's template, with CELLVM_TEMPLATE_DIR naming its root so
    that Sandbox.create(..., snapshot=True) of the same launch restores it."""
    build_image_or_skip()
    import shutil
    import snapshot_format as snapshot
    root = tempfile.mkdtemp(prefix="cellvm-tpl-", dir="/tmp")
    old = os.environ.get(snapshot.TEMPLATE_DIR_ENV)
    os.environ[snapshot.TEMPLATE_DIR_ENV] = root
    try:
        launch = CliLaunch(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB)
        r = subprocess.run([CLI, "snapshot", "create", *launch.args], capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0, r.stdout + r.stderr
        snapdir, why = launch.check(root)
        assert snapdir, why
        tdir = snapshot.TemplateDir(launch.name, root)
        yield Template(launch, tdir, snapdir, snapshot.read_manifest(snapdir))
    finally:
        if old is None:
            os.environ.pop(snapshot.TEMPLATE_DIR_ENV, None)
        else:
            os.environ[snapshot.TEMPLATE_DIR_ENV] = old
        shutil.rmtree(root, ignore_errors=True)
