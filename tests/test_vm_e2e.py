"""End to end through Sandbox.create(): a real QEMU micro-VM booted from
build/image, driven with the E2B-style SDK. The VM is the session's
(conftest.vm_sandbox, shared with test_vm_qemu); the last test stops it and
boots a fresh one.

Under TCG a boot is ~3 s to the agent's HELLO and ~15 s until the zygote has
numpy/pandas/matplotlib; create() returns after both.
"""

import base64
import os
import re
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cellvm import CommandExitException, Sandbox, TimeoutException  # noqa: E402
from conftest import IMAGE, process_gone, qemu_pids  # noqa: E402
from test_vm_qemu import out, run  # noqa: E402

CREATE_TIMEOUT = 300


@pytest.fixture(scope="session")
def sbx(vm_sandbox):
    return vm_sandbox


# --- execution: E2B's cases --------------------------------------------------

def test_first_cell_is_execution_one_and_results_come_back(sbx):
    """create() waited for the zygote without running a cell of its own."""
    ex = run(sbx, "x = 20\nx + 22")
    assert ex.execution_count == 1
    assert ex.text == "42"
    assert ex.results[0].is_main_result
    assert run(sbx, "x").text == "20"  # the namespace persists


def test_dataframe_result(sbx):
    ex = run(sbx, "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})")
    r = ex.results[0]
    assert "<table" in r.html and r.text.splitlines()[0].split() == ["a", "b"]
    assert r.data == {"a": [1, 2], "b": ["x", "y"]}


def test_figure_is_a_png(sbx):
    ex = run(sbx, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
    pngs = [r for r in ex.results if r.png]
    assert len(pngs) == 1 and pngs[0].text == "<Figure size 640x480 with 1 Axes>"
    assert base64.b64decode(pngs[0].png).startswith(b"\x89PNG\r\n\x1a\n")


def test_error(sbx):
    ex = sbx.run_code("1 / 0", timeout=60)
    assert ex.error.name == "ZeroDivisionError"
    assert ex.error.value == "division by zero"
    assert "ZeroDivisionError" in ex.error.traceback


def test_ipykernel_frames_show_their_source_lines(sbx):
    # The image has no ipykernel, only the source files whose frames the
    # kernel stands in for (image-build): input()'s refusal reads as in E2B's.
    ex = sbx.run_code("input('name: ')", timeout=60)
    assert ex.error.name == "StdinNotImplementedError", ex.error
    tb = re.sub(r"\x1b\[[0-9;]*m", "", ex.error.traceback)
    assert "ipykernel/kernelbase.py:1174, in Kernel.raw_input(self, prompt)" in tb, tb
    assert "-> 1174     raise StdinNotImplementedError(" in tb, tb
    # %less of a missing file: zmqshell.py's frame, with its line too.
    ex = sbx.run_code("%less /no/such/file", timeout=60)
    tb = re.sub(r"\x1b\[[0-9;]*m", "", ex.error.traceback)
    assert "zmqshell.py:329, in KernelMagics.less(self, arg_s)" in tb, tb
    assert "--> 329     cont = open(arg_s).read()" in tb, tb
    # sys.stdout.write(bytes): iostream.py's OutStream.write, with its line.
    ex = sbx.run_code("import sys\nsys.stdout.write(b'x')", timeout=60)
    tb = re.sub(r"\x1b\[[0-9;]*m", "", ex.error.traceback)
    assert "ipykernel/iostream.py:537, in OutStream.write(self, string)" in tb, tb
    assert "--> 537     raise TypeError(f\"write() argument must be str, not {type(string)}\")" in tb, tb


def test_stdout_streams_while_the_cell_runs(sbx):
    seen = []
    ex = run(sbx, "import sys, time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second')",
             on_stdout=lambda m: seen.append((time.monotonic(), str(m))))
    done = time.monotonic()
    assert out(ex) == "first\nsecond\n"
    assert seen[0][1] == "first\n"
    assert done - seen[0][0] > 1.0  # delivered before the cell ended


def test_timeout_interrupts_and_the_context_survives(sbx):
    run(sbx, "kept = 'yes'")
    with pytest.raises(TimeoutException):
        sbx.run_code("import time\ntime.sleep(30)", timeout=1)
    assert run(sbx, "kept").text == "yes"


def test_sandbox_envs_reach_cells_and_commands(sbx):
    assert out(run(sbx, "import os\nprint(os.environ['CELLVM_E2E'])")) == "sandbox-wide\n"
    assert sbx.commands.run("echo $CELLVM_E2E").stdout == "sandbox-wide\n"
    ex = run(sbx, "print(os.environ['CELLVM_E2E'])", envs={"CELLVM_E2E": "per-call"})
    assert out(ex) == "per-call\n"


def test_e2b_default_envs_name_this_sandbox_and_its_template(sbx):
    """E2B_SANDBOX_ID is the id of this sandbox (restored from the session's
    template: its own, not the template's); E2B_TEMPLATE_ID get_info()'s."""
    sid, tid = sbx.sandbox_id, sbx.get_info().template_id
    assert tid
    e2b = 'echo "$E2B_SANDBOX $E2B_SANDBOX_ID $E2B_TEMPLATE_ID"'
    assert sbx.commands.run(e2b).stdout == f"true {sid} {tid}\n"
    ex = run(sbx, "import os\nprint(os.environ['E2B_SANDBOX'], os.environ['E2B_SANDBOX_ID'], "
                  "os.environ['E2B_TEMPLATE_ID'])")
    assert out(ex) == f"true {sid} {tid}\n"


# --- files -------------------------------------------------------------------

def test_files_round_trip(sbx):
    blob = os.urandom(3 * 1024 * 1024 + 17)  # several FILE_DATA / FILE_CHUNK pieces
    assert sbx.files.make_dir("data") is True
    info = sbx.files.write("data/blob.bin", blob)
    assert info.path == "/home/user/data/blob.bin"
    assert sbx.files.read("data/blob.bin", format="bytes") == blob
    # A streamed read: on the VM's single serial stream it shares the connection.
    assert b"".join(sbx.files.read("data/blob.bin", format="stream")) == blob
    # The cell sees what the files service wrote, as the sandbox user.
    ex = run(sbx, "import hashlib, os\np = '/home/user/data/blob.bin'\n"
                  "print(hashlib.sha256(open(p, 'rb').read()).hexdigest(), os.stat(p).st_uid)")
    import hashlib
    assert out(ex) == f"{hashlib.sha256(blob).hexdigest()} 1000\n"


def test_files_text_list_and_remove(sbx):
    sbx.files.make_dir("notes")
    sbx.files.write("notes/a.txt", "olá\n")
    run(sbx, "open('notes/b.txt', 'w').write('from a cell')")
    assert sbx.files.read("notes/a.txt") == "olá\n"
    assert sbx.files.read("notes/b.txt") == "from a cell"
    names = [(e.name, e.type.value if hasattr(e.type, "value") else e.type)
             for e in sbx.files.list("notes")]
    assert [n for n, _ in names] == ["a.txt", "b.txt"]
    sbx.files.remove("notes/a.txt")
    assert not sbx.files.exists("notes/a.txt")


# --- commands ----------------------------------------------------------------

def test_command_run_and_exit_code(sbx):
    r = sbx.commands.run("echo hi; echo err >&2; pwd; id -un")
    assert r.exit_code == 0
    assert r.stdout == "hi\n/home/user\nuser\n" and r.stderr == "err\n"
    with pytest.raises(CommandExitException) as e:
        sbx.commands.run("exit 3")
    assert e.value.exit_code == 3


def test_background_command(sbx):
    h = sbx.commands.run("sleep 0.5; echo done-late", background=True)
    assert h.pid in [p.pid for p in sbx.commands.list()]
    r = h.wait()
    assert r.exit_code == 0 and r.stdout == "done-late\n"
    h = sbx.commands.run("sleep 60", background=True)
    h.kill()
    assert h.pid not in [p.pid for p in sbx.commands.list()] or _gone_soon(sbx, h.pid)


def _gone_soon(sbx, pid):
    for _ in range(50):
        if pid not in [p.pid for p in sbx.commands.list()]:
            return True
        time.sleep(0.1)
    return False


# --- isolation inside the VM -------------------------------------------------

def test_cells_run_as_uid_1000(sbx):
    ex = run(sbx, "import os\nprint(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())")
    assert out(ex) == "1000 1000 1000 []\n"


def test_seccomp_denies_mount_and_user_namespaces(sbx):
    """mount(2) fails for any non-root; unshare(CLONE_NEWUSER) would succeed
    for an unprivileged user on Debian's kernel, so its EPERM is the filter's."""
    ex = run(sbx, "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                  "print(libc.mount(b'none', b'/mnt', b'tmpfs', 0, None), ctypes.get_errno())\n"
                  "print(libc.unshare(0x10000000), ctypes.get_errno())\n"
                  "print(open('/proc/sys/kernel/unprivileged_userns_clone').read().strip()\n"
                  "      if os.path.exists('/proc/sys/kernel/unprivileged_userns_clone') else '1')")
    lines = out(ex).splitlines()
    assert lines[0] == "-1 1"  # EPERM
    assert lines[1] == "-1 1"
    assert lines[2] == "1"  # the kernel would have allowed it


def test_loopback_networking_without_a_nic(sbx):
    """network='none': no interface but lo, so init gives the agent `--network
    loopback` and user code's sockets reach this machine only
    (docs/SECURITY.md, "Network"): a web server a command starts on 127.0.0.1
    answers a cell, as when an agent tries the app it just wrote; other
    addresses are unreachable, vsock stays denied."""
    assert sbx.hello["network"] == "loopback"
    server = sbx.commands.run("exec python3 -m http.server 8000 --bind 127.0.0.1", background=True,
                              timeout=0)
    try:
        ex = run(sbx, "import os, socket, time, urllib.request\n"
                      "print(sorted(os.listdir('/sys/class/net')))\n"
                      "deadline = time.monotonic() + 60\n"
                      "while True:\n"
                      "    try:\n"
                      "        r = urllib.request.urlopen('http://127.0.0.1:8000/', timeout=10); break\n"
                      "    except OSError:\n"
                      "        if time.monotonic() > deadline: raise\n"
                      "        time.sleep(0.2)\n"
                      "print(r.status, b'Directory listing' in r.read())\n"
                      "try: socket.create_connection(('10.0.2.2', 80), timeout=5)\n"
                      "except OSError as e: print(e.errno)\n"
                      "try: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\n"
                      "except OSError as e: print(e.errno)")
        assert out(ex).splitlines() == ["['lo']", "200 True", "101", "1"], ex  # ENETUNREACH, EPERM
    finally:
        server.kill()


def test_each_context_has_its_own_cgroup_with_a_memory_limit(sbx):
    """create() sets cellvm.mem_limit: init makes /sys/fs/cgroup/user and the
    agent puts each context in user/ctx-<id> with memory.max and pids.max."""
    assert "cgroups" in sbx.hello["capabilities"], sbx.hello["capabilities"]
    probe = ("cg = open('/proc/self/cgroup').read().strip().split('::')[1]\n"
             "d = '/sys/fs/cgroup' + cg\n"
             "print(cg)\n"
             "print(open(d + '/memory.max').read().strip(), open(d + '/pids.max').read().strip())\n"
             "print(open('/sys/fs/cgroup/user/memory.max').read().strip())")
    default = out(run(sbx, probe)).splitlines()
    ctx = sbx.create_code_context()
    other = out(run(sbx, probe, context=ctx)).splitlines()
    assert default[0].startswith("/user/ctx-") and other[0] == f"/user/ctx-{ctx.id}"
    assert default[0] != other[0]
    mem, pids = int(other[1].split()[0]), other[1].split()[1]
    user_max = int(other[2])
    assert 0 < mem <= user_max < 1024 * 1024 * 1024  # below the VM's 1 GiB
    assert pids.isdigit()
    sbx.remove_code_context(ctx)


def test_javascript_and_typescript_contexts(sbx):
    """Debian's Node.js in the image runs cellvm's driver (docs/JAVASCRIPT.md):
    E2B's JavaScript cases, confined as Python cells are, in the context's cgroup."""
    contexts = sbx.list_code_contexts()
    assert "javascript" in [c.language for c in contexts]
    ex = sbx.run_code("console.log('Hello, World!')", language="js", timeout=120)
    assert ex.logs.stdout == ["Hello, World!\n"], ex
    ex = sbx.run_code("import { readFileSync } from 'fs'\nconst n = await Promise.resolve(41); n + 1",
                      language="js", timeout=60)
    assert ex.text == "42" and ex.error is None, ex
    ex = sbx.run_code("typeof readFileSync + ' ' + process.cwd()", language="js", timeout=60)
    assert ex.text == "function /home/user", ex
    ex = sbx.run_code("const st = require('fs').readFileSync('/proc/self/status', 'utf8');\n"
                      "const cg = require('fs').readFileSync('/proc/self/cgroup', 'utf8').trim();\n"
                      "`${process.getuid()} ${st.split('Seccomp:')[1].trim().split(/\\s/)[0]} ${cg}`",
                      language="js", timeout=60)
    uid, seccomp, cg = ex.text.split()
    assert (uid, seccomp) == ("1000", "2") and cg.startswith("0::/user/ctx-"), ex
    ex = sbx.run_code("const message: string = 'Hello, World!'; console.log(message)",
                      language="ts", timeout=120)
    assert ex.logs.stdout == ["Hello, World!\n"], ex
    with pytest.raises(TimeoutException):
        sbx.run_code("while (true) {}", language="js", timeout=3)
    assert sbx.run_code("n", language="js", timeout=60).text == "41"


# --- E2B's own tests in the micro-VM (docs/CONFORMANCE.md) -------------------
# A few of ../shared/e2b_conformance's tests, unchanged, against the session
# VM (tests/conformance/run runs them all against dev-mode agents): bash, cwd
# at the image's /home/user, JavaScript, contexts, a matplotlib figure. Only
# tests that take E2B's `sandbox` fixture and leave the sandbox alive.
E2B_SUITE = os.path.join(os.path.dirname(ROOT), "shared", "e2b_conformance")
VM_CONFORMANCE = [
    "sync/test_bash.py::test_bash",
    "sync/test_cwd.py::test_cwd_python",
    "sync/test_cwd.py::test_cwd_bash",
    "sync/test_cwd.py::test_cwd_javascript",
    "sync/env_vars/test_bash.py::test_env_vars_per_execution",
    "sync/test_default_kernels.py::test_js_top_level_await",
    "sync/test_contexts.py::test_restart_context",
    "sync/test_kernels.py::test_independence_of_kernels",
    "sync/test_display_data.py::test_display_data",
    "sync/test_streaming.py::test_streaming_output",
]


def _e2b_test(case):
    """The test function `case` names, from E2B's module imported with E2B's
    module names (client/python/compat)."""
    import importlib.util
    path, name = case.split("::")
    full = os.path.join(E2B_SUITE, path)
    if not os.path.exists(full):
        pytest.skip(f"E2B's suite is not at {E2B_SUITE}")
    compat = os.path.join(ROOT, "client", "python", "compat")
    if compat not in sys.path:
        sys.path.insert(0, compat)
    modname = "e2b_conformance__" + path[:-3].replace("/", "__")
    mod = sys.modules.get(modname)
    if mod is None:
        spec = importlib.util.spec_from_file_location(modname, full)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[modname] = mod
    return getattr(mod, name)


@pytest.mark.parametrize("case", VM_CONFORMANCE)
def test_e2b_conformance_in_the_vm(sbx, case):
    _e2b_test(case)(sbx)


# --- kill and a fresh boot (last of the session: ends its VM) --------------

@pytest.mark.ends_session_vm(2)
def test_kill_then_a_fresh_sandbox_works_and_shuts_down_cleanly(sbx, monkeypatch):
    """kill() leaves no process or temp file; a new Sandbox is a new machine;
    shutdown() powers the guest off (QEMU exits by itself, status 0) and
    cleans up as kill() does. The fresh one is E2B's `with Sandbox() as s:`,
    which boots $CELLVM_IMAGE when $CELLVM_ADDR is not set."""
    pid, tmp = sbx.vmm_pid, sbx.vm.dir
    sbx.close()  # QEMU's serial socket takes one client at a time
    with Sandbox.connect(sbx.vm.address, request_timeout=60) as s:
        run(s, "left_behind = 1")
    sbx.kill()
    assert process_gone(pid) and pid not in qemu_pids()
    assert not os.path.exists(tmp)
    sbx.kill()  # idempotent
    monkeypatch.delenv("CELLVM_ADDR", raising=False)
    monkeypatch.setenv("CELLVM_IMAGE", IMAGE)
    with Sandbox() as again:
        assert again.vmm_pid != pid
        ex = again.run_code("'left_behind' in globals(), 6 * 7", timeout=60)
        assert ex.text == "(False, 42)"  # a new machine, not the old one
        pid2, tmp2, vm2 = again.vmm_pid, again.vm.dir, again.vm
        again.shutdown()
        # It powered off; it was not killed (a VM of `cellvm create` is not
        # this process's child: QEMU was gone before kill() came).
        if hasattr(vm2, "proc"):
            assert vm2.proc.returncode == 0
        else:
            assert vm2.exited_by_itself
        assert process_gone(pid2) and not os.path.exists(tmp2)
    assert process_gone(pid2) and not os.path.exists(tmp2)
