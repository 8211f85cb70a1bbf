"""`cellvm serve` as the tests start it (tests/test_serve_*.py): a free
loopback port, a fresh $CELLVM_API_KEY, a private registry ($CELLVM_RUNTIME_DIR)
and TMPDIR, and at the end a check that it left nothing behind.

The servers of one pytest run share one template root (built by the first
server's start, restored by every later one), unless $CELLVM_TEMPLATE_DIR
names one.
"""

import atexit
import glob
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import IMAGE, processes_mentioning  # noqa: E402

BUILD = os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build"))
CLI = os.path.abspath(os.path.join(BUILD, "cellvm"))
HEALTH_TIMEOUT = 180   # the first start builds the template (~60 s under TCG)

_shared_templates = []
# The user's choice, read when the tests are collected: conftest's session
# template (vm_template) sets it later for the SDK, and its guest ran cells in
# its default context, which a server's sandbox must not inherit.
_USER_TEMPLATE_DIR = os.environ.get("CELLVM_TEMPLATE_DIR")


def template_root():
    """The run's template root for servers: made once, removed at exit."""
    if _USER_TEMPLATE_DIR:
        return _USER_TEMPLATE_DIR
    if not _shared_templates:
        d = tempfile.mkdtemp(prefix="cellvm-serve-tpl-", dir="/tmp")
        _shared_templates.append(d)
        atexit.register(shutil.rmtree, d, True)  # memory images: large
    return _shared_templates[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, n=6000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"({path}: {e})"


class Server:
    """`cellvm serve` with a private registry, TMPDIR and (unless
    $CELLVM_TEMPLATE_DIR names one) template root."""

    def __init__(self, tmp, extra_args=(), env_extra=None):
        self.tmp = tmp
        self.run = os.path.join(tmp, "run")
        os.mkdir(self.run, 0o700)
        # Short: the VMs' sockets live under it (AF_UNIX paths are short).
        self.tmpdir = tempfile.mkdtemp(prefix="cellvm-s-", dir="/tmp")
        self.templates = template_root()
        self.key = "e2b_" + secrets.token_hex(20)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(tmp, "serve.log")
        self.paused = os.path.join(tmp, "paused")  # its own paused store
        self.snapshots = os.path.join(tmp, "snapshots")  # and snapshot store
        env = dict(os.environ, CELLVM_API_KEY=self.key, CELLVM_RUNTIME_DIR=self.run,
                   CELLVM_PAUSED_DIR=self.paused, CELLVM_SNAPSHOTS_DIR=self.snapshots,
                   CELLVM_TEMPLATE_DIR=self.templates, TMPDIR=self.tmpdir)
        # conftest's suite-wide settings (cold boots, 6 h lifetimes) are not the
        # server's: it restores its template and gives E2B's default of 300 s.
        for name in ("CELLVM_SNAPSHOT", "CELLVM_DEFAULT_TIMEOUT", "CELLVM_ADDR"):
            env.pop(name, None)
        for name in [k for k in env if k.startswith("E2B_")]:
            env.pop(name)
        env.update(env_extra or {})
        self.argv = [CLI, "serve", "--listen", f"127.0.0.1:{self.port}", "--image", IMAGE,
                     *extra_args]
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, env=env, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.ready_after = None

    def wait_healthy(self, timeout=HEALTH_TIMEOUT):
        t0 = time.monotonic()
        last = None
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no $http_proxy
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                pytest.fail(f"`{' '.join(self.argv)}` exited with {self.proc.returncode} before "
                            f"/health answered:\n{tail(self.log_path)}")
            try:
                with direct.open(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        self.ready_after = time.monotonic() - t0
                        return
                    last = r.status
            except urllib.error.HTTPError as e:
                last = e.code
            except (urllib.error.URLError, OSError) as e:
                last = str(e)
            time.sleep(0.5)
        pytest.fail(f"/health did not answer 200 within {timeout} s (last: {last}):\n{tail(self.log_path)}")

    def leftovers(self):
        """QEMU (or anything else) still running with our paths, registry entries, temp dirs."""
        procs = sorted(set(processes_mentioning(self.tmpdir)) | set(processes_mentioning(self.run)))
        entries = glob.glob(os.path.join(self.run, "*.sandbox"))
        temps = glob.glob(os.path.join(self.tmpdir, "cellvm-*"))
        return procs, entries, temps

    def stop(self):
        """SIGTERM, then what is left; returns the problems found (and cleans them up)."""
        problems = []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                problems.append("the server did not exit within 60 s of SIGTERM")
                self.proc.kill()
                self.proc.wait()
        else:  # a signal from elsewhere, or a crash: the tests' errors say when
            problems.append(f"the server had exited before the end of the module "
                            f"(status {self.proc.returncode})")
        self.log.close()
        deadline = time.monotonic() + 20  # VMs the server killed may take a moment to go
        while True:
            procs, entries, temps = self.leftovers()
            if not (procs or entries or temps) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if procs:
            cmds = []
            for pid in procs:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().replace(b"\0", b" ")[:300].decode("utf-8", "replace")
                    cmds.append(f"{pid}: {argv}")
                    os.kill(pid, signal.SIGKILL)  # ours: they name our private directories
                except OSError:
                    pass
            problems.append("processes the server started are still running after it exited:\n  "
                            + "\n  ".join(cmds))
        if entries:
            problems.append(f"registry entries left: {entries}")
        if temps:
            problems.append(f"temp directories left: {temps}")
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        return problems


def node_with_packages_or_skip(pkg_dir, probe, min_node, what):
    """node, once `pkg_dir`'s packages are installed (`npm ci` when
    node_modules/`probe` is missing); a skip without node >= min_node."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node and npm are needed for {what}")
    v = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    m = re.match(r"v(\d+)\.(\d+)\.(\d+)", v)
    if not m or tuple(map(int, m.groups())) < min_node:
        pytest.skip(f"node {v}: {what} needs >= {'.'.join(map(str, min_node))}")
    if not os.path.isdir(os.path.join(pkg_dir, "node_modules", probe)):
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=pkg_dir, capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0, f"npm ci in {pkg_dir} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return node


def serving(tmp, *args, server_class=Server, **kwargs):
    """For a fixture: `yield from serving(tmp)` gives a Server (or a
    `server_class` made from it) once healthy, stops it after, and fails on
    what its stop found (a process left, ...)."""
    s = server_class(tmp, *args, **kwargs)
    try:
        s.wait_healthy()
        yield s
    finally:
        problems = s.stop()
    assert not problems, "\n".join(problems) + "\n-- server log:\n" + tail(s.log_path)
