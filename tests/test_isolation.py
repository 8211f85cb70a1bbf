"""What user code gets (issue 5): the sandbox user, no capabilities,
no_new_privs, the seccomp filter, no way to the agent's transports, fds or
process. Every check runs as a cell in a real executor; where a denial could
come from the missing privileges alone, the same call is shown to work for the
unconfined test process (root) first.
"""

import ctypes
import os
import platform
import socket
import stat

import pytest

from test_isolation_common import SANDBOX_UID, Box
from cellvm import _wire


@pytest.fixture(scope="module")
def box():
    b = Box()
    yield b
    b.close()


def test_handshake_says_how_user_code_is_confined(box):
    caps = box.conn.hello["capabilities"]
    assert "seccomp" in caps and "sandbox_user" in caps
    # No cgroup v2 controllers here: the fallback is announced, and logged once.
    assert ("cgroups" in caps) != ("rlimits_only" in caps)
    if "rlimits_only" in caps:
        assert box.agent.read_log().count("no per-context cgroups") == 1


def test_runs_as_the_sandbox_user_without_privileges(box):
    out = box.run("import os\nprint(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())\n"
                  "print(open('/proc/self/status').read())")
    ids, status = out.stdout.split("\n", 1)
    assert ids == f"{SANDBOX_UID} {SANDBOX_UID} {SANDBOX_UID} []"
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[cap], 16) == 0, (cap, fields[cap])
    assert fields["NoNewPrivs"].strip() == "1"
    assert fields["Seccomp"].strip() == "2"


def test_rlimits(box):
    out = box.run("import resource as r\n"
                  "print(r.getrlimit(r.RLIMIT_CORE), r.getrlimit(r.RLIMIT_NOFILE)[1] <= 8192)")
    assert out.stdout == "(0, 0) True\n", out


# x86-64 syscall numbers of calls the filter denies (name: (nr, args)).
X86_64_DENIED = {
    "mount": (165, (b"none", b"/mnt", b"tmpfs", 0, 0)),
    "umount2": (166, (b"/", 0)),
    "pivot_root": (155, (b"/", b"/")),
    "chroot": (161, (b"/",)),
    "reboot": (169, (0, 0, 0, 0)),
    "kexec_load": (246, (0, 0, 0, 0)),
    "init_module": (175, (0, 0, b"")),
    "finit_module": (313, (0, b"", 0)),
    "delete_module": (176, (b"x", 0)),
    "bpf": (321, (0, 0, 0)),
    "perf_event_open": (298, (0, 0, -1, -1, 0)),
    "keyctl": (250, (0, 0, 0, 0, 0)),
    "add_key": (248, (b"user", b"k", b"v", 1, -2)),
    "request_key": (249, (b"user", b"k", 0, 0)),
    "ptrace": (101, (16, 1, 0, 0)),  # PTRACE_ATTACH to init
    "process_vm_readv": (310, (1, 0, 0, 0, 0, 0)),
    "process_vm_writev": (311, (1, 0, 0, 0, 0, 0)),
    "swapon": (167, (b"/x", 0)),
    "swapoff": (168, (b"/x",)),
    "setns": (308, (0, 0)),
    "unshare(CLONE_NEWUSER)": (272, (0x10000000,)),
    "userfaultfd": (323, (1,)),  # UFFD_USER_MODE_ONLY: allowed to anyone unfiltered
    "open_by_handle_at": (304, (0, 0, 0)),
    "iopl": (172, (3,)),
    "ioperm": (173, (0, 1, 1)),
    "io_uring_setup": (425, (1, 0)),
    "fsopen": (430, (b"tmpfs", 0)),
}


@pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers are x86-64's")
def test_seccomp_denies_with_eperm(box):
    lines = []
    for name, (nr, args) in X86_64_DENIED.items():
        lines.append(f"check({name!r}, {nr}, {args!r})")
    code = ("import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.syscall.restype = ctypes.c_long\n"
            "def check(name, nr, args):\n"
            "    a = [ctypes.c_char_p(x) if isinstance(x, bytes) else ctypes.c_long(x) "
            "for x in args]\n"
            "    r = libc.syscall(ctypes.c_long(nr), *a)\n"
            "    print(name, r, errno.errorcode.get(ctypes.get_errno(), '0'))\n"
            + "\n".join(lines))
    out = box.run(code)
    assert out.ok, out
    results = dict((ln.rsplit(" ", 2)[0], ln.rsplit(" ", 2)[1:]) for ln in out.stdout.splitlines())
    assert set(results) == set(X86_64_DENIED)
    for name, (ret, err) in results.items():
        assert (ret, err) == ("-1", "EPERM"), (name, ret, err)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers are x86-64's")
def test_unfiltered_process_can_do_what_the_filter_denies():
    """So the EPERMs above come from the filter, not from a missing privilege."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(323, 1)  # userfaultfd(UFFD_USER_MODE_ONLY)
    if fd >= 0:
        os.close(fd)
    ring = libc.syscall(425, 1, ctypes.create_string_buffer(120))
    if ring >= 0:
        os.close(ring)
    assert fd >= 0 or ring >= 0 or ctypes.get_errno() != 1


def test_clone3_is_enosys_and_processes_still_start(box):
    out = box.run("import ctypes, errno, subprocess\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                  "print(libc.syscall(435, 0, 0), errno.errorcode[ctypes.get_errno()])\n"
                  "print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout"
                  ", end='')\n"
                  "import threading; t = threading.Thread(target=print, args=('thread',)); "
                  "t.start(); t.join()")
    assert out.stdout == "-1 ENOSYS\nchild\nthread\n", out


def test_network_is_off_by_default(box):
    assert box.conn.hello["network"] == "none"
    out = box.run("import socket\nfor fam in ('AF_INET', 'AF_INET6'):\n"
                  "    try:\n        socket.socket(getattr(socket, fam)); print(fam, 'open')\n"
                  "    except OSError as e:\n        print(fam, e.errno)\n"
                  "socket.socket(socket.AF_UNIX).close(); print('unix ok')")
    assert out.stdout == "AF_INET 1\nAF_INET6 1\nunix ok\n", out


def test_network_allowed_on_request():
    b = Box("--network", "allow")
    try:
        assert b.conn.hello["network"] == "allow"
        out = b.run("import socket\ns = socket.socket(); s.close(); print('inet ok')\n"
                    "try: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\n"
                    "except OSError as e: print('vsock', e.errno)")
        assert out.stdout == "inet ok\nvsock 1\n", out
    finally:
        b.close()


def _interfaces_up_besides_lo():
    import fcntl
    import struct
    up = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            ifr = fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", name.encode(), 0))  # SIOCGIFFLAGS
            flags = struct.unpack("16sH14x", ifr)[1]
            if flags & 0x1 and not flags & 0x8:  # IFF_UP, not IFF_LOOPBACK
                up.append(name)
    return up


def test_network_loopback_on_a_networked_host_is_none():
    """--network loopback (cellvm-init's choice in a guest without NIC) where an
    interface besides lo is up, as on this host: user code would reach the
    network through it, so the agent keeps sockets denied and says why."""
    others = _interfaces_up_besides_lo()
    if not others:
        pytest.skip("this host has no interface up but lo")
    b = Box("--network", "loopback")
    try:
        assert b.conn.hello["network"] == "none"
        out = b.run("import socket\ntry: socket.socket(socket.AF_INET)\n"
                    "except OSError as e: print(e.errno)")
        assert out.stdout == "1\n", out
        log = b.agent.read_log()
        assert "--network loopback: interface(s) other than lo up (" in log
        assert others[0] in log.split("other than lo up (", 1)[1].split(")")[0]
    finally:
        b.close()


def test_network_policy_from_cellvm_init_and_its_override():
    """Under cellvm-init the default comes from CELLVM_NET (static: the guest
    has eth0, allow); --network on the command line (cellvm.agent_args) wins."""
    def under_init(*args):
        return Box(*args, launcher=lambda workdir: ["env", "CELLVM_NET=static"])
    for args, policy in (((), "allow"), (("--network", "none"), "none")):
        b = under_init(*args)
        try:
            assert b.conn.hello["network"] == policy, args
        finally:
            b.close()


# In a new network namespace, as root: lo (down there) brought up, then exec.
LO_UP = ("import fcntl, os, socket, struct, sys\n"
         "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
         "ifr = fcntl.ioctl(s, 0x8913, struct.pack('16sH14x', b'lo', 0))\n"
         "flags = struct.unpack('16sH14x', ifr)[1] | 0x1\n"
         "fcntl.ioctl(s, 0x8914, struct.pack('16sH14x', b'lo', flags))\n"
         "os.execv(sys.argv[1], sys.argv[1:])")

LOOPBACK_CELL = (
    "import http.server, socket, threading, urllib.request\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        self.send_response(200); self.end_headers(); self.wfile.write(b'from 127.0.0.1')\n"
    "    def log_message(self, *a): pass\n"
    "srv = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
    "threading.Thread(target=srv.serve_forever, daemon=True).start()\n"
    "port = srv.server_address[1]\n"
    "print(urllib.request.urlopen(f'http://127.0.0.1:{port}/', timeout=10).read().decode())\n"
    "srv.shutdown()\n"
    "s6 = socket.socket(socket.AF_INET6); s6.bind(('::1', 0)); s6.close(); print('inet6 ok')\n"
    "for addr in (('192.0.2.1', 80), ('10.0.2.2', 80)):\n"
    "    try: socket.create_connection(addr, timeout=5); print(addr, 'connected')\n"
    "    except OSError as e: print(addr[0], e.errno)\n"
    "try: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\n"
    "except OSError as e: print('vsock', e.errno)")
# ENETUNREACH for anything but loopback, EPERM for vsock
LOOPBACK_OUT = "from 127.0.0.1\ninet6 ok\n192.0.2.1 101\n10.0.2.2 101\nvsock 1\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace of its own needs root")
def test_network_loopback_where_only_lo_is_up():
    """The agent in a network namespace with nothing but lo, told
    CELLVM_NET=loopback as cellvm-init tells it in a guest without NIC: user
    code opens AF_INET/AF_INET6 sockets, serves and
    reaches 127.0.0.1, and reaches nothing else; vsock stays denied."""
    b = Box(launcher=lambda workdir: ["unshare", "--net", "--", "env", "CELLVM_NET=loopback",
                                      "/usr/bin/python3", "-c", LO_UP])
    try:
        assert b.conn.hello["network"] == "loopback"
        out = b.run(LOOPBACK_CELL)
        assert out.stdout == LOOPBACK_OUT, out
    finally:
        b.close()


def test_vsock_to_host_and_local_is_denied(box):
    if not hasattr(socket, "AF_VSOCK"):
        pytest.skip("Python has no AF_VSOCK")
    out = box.run("import socket\nfor cid in (1, 2):\n    try:\n"
                  "        s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\n"
                  "        s.connect((cid, 1024)); print(cid, 'connected')\n"
                  "    except OSError as e:\n        print(cid, e.errno)")
    assert out.stdout == "1 1\n2 1\n", out


def test_agent_socket_is_root_only(box):
    st = os.stat(box.agent.sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0
    out = box.run("import socket\ns = socket.socket(socket.AF_UNIX)\n"
                  f"try: s.connect({box.agent.sock!r}); print('connected')\n"
                  "except OSError as e: print(e.errno)")
    assert out.stdout == "13\n", out  # EACCES


def test_virtio_ports_unreachable(box):
    out = box.run("import glob, os\nfor p in glob.glob('/dev/virtio-ports/*') + "
                  "glob.glob('/dev/vport*'):\n    try:\n        os.open(p, os.O_RDWR); "
                  "print(p, 'opened')\n    except OSError as e:\n        print(p, e.errno)\n"
                  "print('end')")
    assert "opened" not in out.stdout and out.stdout.endswith("end\n"), out


def test_agent_and_init_cannot_be_killed(box):
    pid = box.conn.hello["pid"]
    out = box.run("import os, signal\n"
                  f"for target in (1, {pid}, -1, -{pid}):\n"
                  "    try:\n        os.kill(target, signal.SIGKILL); print(target, 'killed')\n"
                  "    except OSError as e:\n        print(target, e.errno)\n"
                  f"try: os.pidfd_open({pid}); print('pidfd')\n"
                  "except OSError as e: print('pidfd', e.errno)")
    assert out.stdout == f"1 1\n{pid} 1\n-1 1\n-{pid} 1\npidfd 1\n", out
    assert box.answers()


def test_agent_fds_are_unreadable_and_not_inherited(box):
    pid = box.conn.hello["pid"]
    out = box.run("import os, subprocess\n"
                  f"try: print(os.listdir('/proc/{pid}/fd'))\n"
                  "except OSError as e: print('agent fd', e.errno)\n"
                  "print(sorted(int(f) for f in os.listdir('/proc/self/fd')))\n"
                  "print(subprocess.run(['ls', '/proc/self/fd'], capture_output=True, text=True)"
                  ".stdout.split())")
    lines = out.stdout.splitlines()
    assert lines[0] == "agent fd 13", out
    # 0-2, the control socket and the executor's own few (the fd capture's
    # four, listdir's, Python's own: 10 in the VM).
    assert eval(lines[1])[:4] == [0, 1, 2, 3] and len(eval(lines[1])) <= 12, out
    assert sorted(int(x) for x in eval(lines[2])) == [0, 1, 2, 3], out  # 3: ls's own dir fd


def test_dev_mode_without_root_keeps_seccomp():
    """An agent that is not root changes no credentials but still filters, and says so."""
    if os.geteuid() != 0:
        pytest.skip("needs root to start the agent as another user")
    import pathlib
    import tempfile
    nobody = 65534
    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="cellvm-devmode-"))
    os.chmod(tmp_path, 0o777)
    sock = str(tmp_path / "dev.sock")
    import subprocess
    import conftest
    from test_isolation_common import wait_for
    log = open(tmp_path / "dev.log", "wb")
    proc = subprocess.Popen([conftest.AGENT, "--listen", "unix:" + sock, "--workdir",
                             str(tmp_path), "--preload", ""], stdout=log,
                            stderr=subprocess.STDOUT, user=nobody, group=nobody,
                            extra_groups=[])
    try:
        if not wait_for(lambda: os.path.exists(sock) or proc.poll() is not None, 30) or \
                proc.poll() is not None:
            pytest.skip("the agent could not run as nobody here: " +
                        (tmp_path / "dev.log").read_text())
        conn = _wire.Connection.connect("unix:" + sock)
        caps = conn.hello["capabilities"]
        assert "rlimits_only" in caps and "seccomp" in caps and "sandbox_user" not in caps
        msgs = list(conn.request(_wire.EXECUTE, {"code": (
            "import os, socket\nprint(os.getuid())\n"
            "try: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\n"
            "except OSError as e: print(e.errno)\n"
            f"try: os.kill({proc.pid}, 9)\nexcept OSError as e: print(e.errno)")}).messages(60))
        text = "".join(b["text"] for t, b in msgs if t == _wire.STREAM)
        assert text == f"{nobody}\n1\n1\n", msgs
        conn.call(_wire.PING, {}, timeout=10)
        conn.close()
        assert "the agent is not root" in (tmp_path / "dev.log").read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
        import shutil
        shutil.rmtree(tmp_path, ignore_errors=True)
