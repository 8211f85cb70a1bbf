"""cellvm-init as PID 1 in a fresh PID, mount, UTS and network namespace.

The agent here is a small Python *test agent* (written below) that stands in
for the real cellvm-agent so each init behaviour can be provoked on its own:
it reports what it sees, dies on demand, leaves orphans, ignores SIGTERM.
One test at the end starts the real build/cellvm-agent under init.

The namespace is not a VM: the configuration comes from $CELLVM_CMDLINE and
cellvm.test=1 makes mount failures non-fatal (docs/INIT.md). reboot(2) from a
PID namespace's init ends that init with SIGHUP (restart) or SIGINT (power
off), which is what a clean shutdown looks like from outside. As at boot,
init starts from a file named init (PR_SET_NAME makes it cellvm-init) and
without the host's /sys and /dev: it mounts its own.
"""

import fcntl
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build"))
# The init is always the musl build in build/ (no sanitizer build of it).
INIT = os.path.join(ROOT, "build", "cellvm-init")
AGENT = os.path.join(BUILD, "cellvm-agent")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for unshare --pid --mount"),
    pytest.mark.skipif(shutil.which("unshare") is None, reason="util-linux unshare missing"),
]

TEST_AGENT = r'''#!/usr/bin/python3
# Test agent: stands in for cellvm-agent under cellvm-init (tests/test_init.py).
import fcntl, json, os, signal, socket, struct, sys, time

path = sys.argv[sys.argv.index("--listen") + 1].removeprefix("unix:")
ready = time.clock_gettime_ns(time.CLOCK_BOOTTIME)


def zombies():
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    out.append(int(pid))
        except OSError:
            pass
    return out


def status_field(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split()[1]
    except OSError:
        return None


def orphan():
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        grandchild = os.fork()
        if grandchild == 0:
            time.sleep(0.5)
            os._exit(0)
        os.write(w, str(grandchild).encode())
        os._exit(0)
    os.waitpid(child, 0)
    os.close(w)
    gpid = int(os.read(r, 32))
    os.close(r)
    return gpid


def lo_flags():
    # SIOCGIFFLAGS on a socket of our own network namespace, whatever /sys shows.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0))
    return struct.unpack("16sH22x", req)[1]


def info():
    with open("/proc/1/comm") as f:
        comm1 = f.read().strip()
    with open("/proc/self/mounts") as f:
        mounts = {l.split()[1]: l.split()[2] for l in f}
    return {"pid": os.getpid(), "ppid": os.getppid(), "comm1": comm1, "env": dict(os.environ),
            "mounts": mounts, "hostname": socket.gethostname(), "lo_up": bool(lo_flags() & 1),
            "netdevs": sorted(os.listdir("/sys/class/net")),
            "premounted": os.path.exists("/run/cellvm-premounted"),
            "argv": sys.argv, "cwd": os.getcwd(), "ready": ready,
            "sigmask": status_field("self", "SigBlk"), "devfd": os.readlink("/dev/fd")}


def handle(cmd):
    word, _, arg = cmd.partition(" ")
    if word == "info":
        return info()
    if word == "orphan":
        return orphan()
    if word == "ppid":
        return status_field(int(arg), "PPid")
    if word == "zombies":
        return zombies()
    if word == "exists":
        return os.path.exists(f"/proc/{int(arg)}")
    if word == "ignore_term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return "ok"
    if word == "shutdown":
        return "ok"  # sent after the reply: init's SIGTERM to us would cut it off
    if word == "die":
        return "dying"
    return "unknown"


if os.path.exists(path):
    os.unlink(path)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path + ".new")
srv.listen(8)
os.rename(path + ".new", path)  # the path appears only once we listen
while True:
    conn, _ = srv.accept()
    with conn:
        cmd = conn.makefile().readline().strip()
        conn.sendall((json.dumps(handle(cmd)) + "\n").encode())
    if cmd == "die":
        os._exit(3)
    if cmd == "shutdown":
        os.kill(1, signal.SIGTERM)
'''


# PID 1 of the new namespaces until it execs init ($0): drops the host's /sys
# and /dev so that init mounts its own, as at boot (a sysfs inherited from the
# host shows the host's network devices). The mount namespace is private.
PRELUDE = ('for m in /sys /dev; do if mountpoint -q "$m"; then umount -l "$m" || exit 1; fi; done; '
           '{premount}exec "$0"')
# A tmpfs on /run before init starts, marked so that the agent can tell it
# from one init would mount: the "already mounted" path.
PREMOUNT_RUN = ("mount -t tmpfs -o mode=0755 premounted /run && "
                "touch /run/cellvm-premounted && ")


class InitNamespace:
    """cellvm-init as PID 1 of new PID/mount/UTS/net namespaces."""

    def __init__(self, agent=None, agent_args=None, extra="", premount_run=False):
        # Not under /tmp or /run: init mounts tmpfs over those inside.
        self.dir = tempfile.mkdtemp(prefix="cellvm-init-", dir="/var/tmp")
        self.sock = os.path.join(self.dir, "agent.sock")
        # Named like the initramfs' /init: /proc/1/comm says cellvm-init only
        # if init names itself.
        self.init = os.path.join(self.dir, "init")
        shutil.copy2(INIT, self.init)
        if agent is None:
            agent = os.path.join(self.dir, "test-agent")
            with open(agent, "w") as f:
                f.write(TEST_AGENT)
            os.chmod(agent, 0o755)
        if agent_args is None:
            agent_args = f"--listen unix:{self.sock}"
        self.cmdline = (f"console=ttyS0 cellvm.test=1 cellvm.debug=1 cellvm.vsock_port=0 "
                        f"cellvm.serial=none cellvm.workdir= cellvm.hostname=cellvm-test "
                        f'cellvm.agent={agent} cellvm.agent_args="{agent_args}" {extra}')
        self.log_path = os.path.join(self.dir, "init.log")
        self.log = open(self.log_path, "wb")
        env = {"CELLVM_CMDLINE": self.cmdline, "PATH": "/usr/bin:/bin", "SECRET_HOST_VAR": "x"}
        prelude = PRELUDE.format(premount=PREMOUNT_RUN if premount_run else "")
        self.proc = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--mount", "--uts", "--net",
             "/bin/sh", "-c", prelude, self.init],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def init_pid(self):
        """Host pid of the namespace's PID 1 (unshare's only child)."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                    kids = f.read().split()
                if kids:
                    return int(kids[0])
            except FileNotFoundError:
                pass
            time.sleep(0.01)
        raise AssertionError("init did not start: " + self.read_log())

    def ask(self, cmd, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.settimeout(timeout)
                    s.connect(self.sock)
                    s.sendall(cmd.encode() + b"\n")
                    return json.loads(s.makefile().readline())
            except (FileNotFoundError, ConnectionError, json.JSONDecodeError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"no agent answered {cmd!r}: " + self.read_log())
                time.sleep(0.02)

    def wait_log(self, text, timeout=5):
        deadline = time.monotonic() + timeout
        while text not in self.read_log():
            assert time.monotonic() < deadline, f"{text!r} not logged: " + self.read_log()
            time.sleep(0.02)

    def wait(self, timeout=15):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("init did not shut down: " + self.read_log())

    def close(self):
        if self.proc.poll() is None:
            # Killing the namespace's PID 1 kills everything in it; find it
            # before unshare goes, since it is found through unshare.
            try:
                os.kill(self.init_pid(), signal.SIGKILL)
            except (AssertionError, ProcessLookupError):
                pass
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def init_ns(request):
    made = []

    def start(**kw):
        ns = InitNamespace(**kw)
        made.append(ns)
        return ns

    yield start
    for ns in made:
        ns.close()


def test_init_binary_is_static_musl_and_small():
    with open(INIT, "rb") as f:
        data = f.read()
    # glibc leaves GLIBC_2.x / GLIBC_PRIVATE symbol versions and GLIBC_TUNABLES
    # in even a static binary; musl has no such strings.
    assert b"GLIBC" not in data
    # No program interpreter and no dynamic section: nothing for a loader to
    # do (a static-pie would still have PT_DYNAMIC for its self-relocation).
    phdrs = subprocess.run(["readelf", "-lW", INIT], capture_output=True, text=True,
                           check=True).stdout
    assert "INTERP" not in phdrs and "DYNAMIC" not in phdrs, phdrs
    dyn = subprocess.run(["readelf", "-d", INIT], capture_output=True, text=True,
                         check=True).stdout
    assert "There is no dynamic section" in dyn, dyn
    stripped = os.path.join(ROOT, "build", "cellvm-init.stripped")
    assert os.path.getsize(stripped) < 100 * 1024


def test_runs_as_pid1_mounts_and_starts_agent(init_ns):
    ns = init_ns()
    info = ns.ask("info")
    assert info["ppid"] == 1
    # The binary is <dir>/init: the name comes from PR_SET_NAME.
    assert info["comm1"] == "cellvm-init"
    m = info["mounts"]
    assert m["/proc"] == "proc"  # a fresh proc of the new PID namespace
    assert m["/sys"] == "sysfs" and m["/dev"] == "devtmpfs"
    assert m["/dev/pts"] == "devpts" and m["/dev/shm"] == "tmpfs"
    assert m["/run"] == "tmpfs" and m["/tmp"] == "tmpfs"
    log = ns.read_log()
    for fstype, target in (("proc", "/proc"), ("sysfs", "/sys"), ("devtmpfs", "/dev"),
                           ("devpts", "/dev/pts"), ("tmpfs", "/dev/shm"), ("tmpfs", "/run"),
                           ("tmpfs", "/tmp")):
        assert f"mounted {fstype} on {target}\n" in log, (fstype, target, log)
    assert "already mounted" not in log
    # init's own sysfs belongs to the new network namespace: lo only.
    assert info["netdevs"] == ["lo"]
    # cgroup2 is mounted while the agent starts (docs/INIT.md); wait for it.
    ns.wait_log("stamp cgroup_mounted")
    assert ns.ask("info")["mounts"]["/sys/fs/cgroup"] == "cgroup2"
    assert info["devfd"] == "/proc/self/fd"
    assert info["hostname"] == "cellvm-test"
    assert info["lo_up"]  # a new net namespace starts with lo down
    assert info["argv"][1:] == ["--listen", "unix:" + ns.sock]
    assert info["cwd"] == "/"
    assert info["sigmask"] == "0000000000000000"  # init's blocked signals are not inherited
    assert "started as pid 1" in log and "stamp agent_exec" in log
    # Taken before the command line said to log: logged once it did.
    assert "stamp init_start\n" in log


def test_already_mounted_filesystem_is_kept(init_ns):
    ns = init_ns(premount_run=True)
    info = ns.ask("info")
    assert info["premounted"]  # the tmpfs of before init, not one mounted over it
    assert info["mounts"]["/run"] == "tmpfs"
    log = ns.read_log()
    assert "tmpfs already mounted on /run\n" in log
    assert ": mounted tmpfs on /run\n" not in log
    assert "mounted tmpfs on /tmp\n" in log


def test_agent_environment_is_clean_and_carries_stamps(init_ns):
    ns = init_ns()
    env = ns.ask("info")["env"]
    assert "SECRET_HOST_VAR" not in env and "CELLVM_CMDLINE" not in env
    assert env["CELLVM_INIT"] == "1"
    assert env["CELLVM_NET"] == "loopback"  # no eth0: the agent's default network policy
    assert env["PATH"].startswith("/usr/local/sbin:")
    stamps = {k[len("CELLVM_STAMP_"):].lower(): int(v)
              for k, v in env.items() if k.startswith("CELLVM_STAMP_")}
    assert {"init_start", "kernel_to_init", "mounts_done", "system_ready",
            "agent_exec"} <= set(stamps)
    assert stamps["kernel_to_init"] == stamps["init_start"]
    assert stamps["init_start"] <= stamps["mounts_done"] <= stamps["system_ready"] \
        <= stamps["agent_exec"] <= time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    # cgroup2 is mounted after the first start: only a restarted agent has its stamp.
    assert "cgroup_mounted" not in stamps
    ns.wait_log("stamp cgroup_mounted")
    first = ns.ask("info")["pid"]
    ns.ask("die")
    while (info := ns.ask("info"))["pid"] == first:
        pass
    restarted = int(info["env"]["CELLVM_STAMP_CGROUP_MOUNTED"])
    assert stamps["agent_exec"] <= restarted <= int(info["env"]["CELLVM_STAMP_AGENT_EXEC"])


def test_reaps_double_forked_orphan(init_ns):
    ns = init_ns()
    gpid = ns.ask("orphan")
    # The middle process exited at once, so the grandchild now belongs to PID 1.
    assert ns.ask(f"ppid {gpid}") == "1"
    deadline = time.monotonic() + 5
    while ns.ask(f"exists {gpid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ns.ask(f"exists {gpid}"), "orphan left as a zombie"
    assert ns.ask("zombies") == []
    assert f"reaped orphan {gpid}" in ns.read_log()


def test_restarts_dying_agent_with_backoff(init_ns):
    ns = init_ns()
    first = ns.ask("info")
    assert ns.ask("die") == "dying"
    t0 = time.monotonic()
    while True:
        info = ns.ask("info")
        if info["pid"] != first["pid"]:
            break
        assert time.monotonic() - t0 < 10
    assert info["ppid"] == 1
    assert info["env"]["CELLVM_STAMP_AGENT_EXEC"] > first["env"]["CELLVM_STAMP_AGENT_EXEC"]
    ns.ask("die")
    while ns.ask("info")["pid"] == info["pid"]:
        pass
    log = ns.read_log()
    assert "exited with status 3" in log
    # backoff doubles while the agent keeps dying young
    assert "restarting in 100 ms" in log and "restarting in 200 ms" in log


def test_zero_restart_cap_still_waits(init_ns):
    # cellvm.restart_max_ms=0 is raised to the 100 ms floor, not a tight loop.
    ns = init_ns(extra="cellvm.restart_max_ms=0")
    for _ in range(2):
        pid = ns.ask("info")["pid"]
        ns.ask("die")
        while ns.ask("info")["pid"] == pid:
            pass
    log = ns.read_log()
    assert log.count("restarting in 100 ms") == 2 and "restarting in 0 ms" not in log


# Signal -> (extra command line, how init ends, what it logs). reboot(2) in a
# PID namespace ends its init: SIGHUP for RB_AUTOBOOT, SIGINT for RB_POWER_OFF.
SHUTDOWN_SIGNALS = {
    "SIGTERM": (signal.SIGTERM, "", -signal.SIGHUP, "shutdown (reboot): SIGTERM"),
    "SIGINT": (signal.SIGINT, "", -signal.SIGHUP, "shutdown (reboot): SIGINT"),
    "SIGINT-poweroff": (signal.SIGINT, "cellvm.shutdown=poweroff", -signal.SIGINT,
                        "shutdown (power off): SIGINT"),
    # The power-off reasons are musl's strsignal() wording.
    "SIGUSR2": (signal.SIGUSR2, "", -signal.SIGINT,
                "shutdown (power off): User defined signal 2"),
    "SIGPWR": (signal.SIGPWR, "", -signal.SIGINT, "shutdown (power off): Power failure"),
}


@pytest.mark.parametrize("case", SHUTDOWN_SIGNALS)
def test_signal_shuts_down_cleanly(init_ns, case):
    sig, extra, want_rc, said = SHUTDOWN_SIGNALS[case]
    ns = init_ns(extra=extra)
    ns.ask("info")
    os.kill(ns.init_pid(), sig)
    rc = ns.wait()
    assert rc == want_rc, (rc, ns.read_log())
    log = ns.read_log()
    assert said in log
    assert "sync and unmount done" in log
    assert "SIGKILL" not in log  # the agent obeyed SIGTERM


def test_sighup_and_sigusr1_are_ignored(init_ns):
    ns = init_ns()
    first = ns.ask("info")["pid"]
    pid = ns.init_pid()
    for sig in (signal.SIGHUP, signal.SIGUSR1):
        os.kill(pid, sig)
    ns.wait_log(f"ignored signal {int(signal.SIGHUP)} (Hangup)")
    ns.wait_log(f"ignored signal {int(signal.SIGUSR1)} (User defined signal 1)")
    assert ns.proc.poll() is None
    assert ns.ask("info")["pid"] == first  # the agent was left alone too
    assert "shutdown" not in ns.read_log()
    os.kill(pid, signal.SIGTERM)
    assert ns.wait() == -signal.SIGHUP


def test_agent_requested_poweroff(init_ns):
    ns = init_ns(extra="cellvm.shutdown=poweroff")
    assert ns.ask("shutdown") == "ok"
    rc = ns.wait()
    assert rc == -signal.SIGINT, (rc, ns.read_log())  # RB_POWER_OFF in a PID namespace


def test_shutdown_kills_what_ignores_sigterm_after_deadline(init_ns):
    ns = init_ns(extra="cellvm.shutdown_timeout_ms=300")
    assert ns.ask("ignore_term") == "ok"
    t0 = time.monotonic()
    os.kill(ns.init_pid(), signal.SIGTERM)
    rc = ns.wait()
    assert rc == -signal.SIGHUP
    assert time.monotonic() - t0 >= 0.3
    assert "sending SIGKILL" in ns.read_log()


def test_missing_agent_is_retried_not_fatal(init_ns):
    ns = init_ns(agent="/nonexistent/agent")
    deadline = time.monotonic() + 5
    while ns.read_log().count("exec /nonexistent/agent") < 2:
        assert time.monotonic() < deadline, ns.read_log()
        time.sleep(0.05)
    assert ns.proc.poll() is None  # PID 1 never gives up
    os.kill(ns.init_pid(), signal.SIGTERM)
    assert ns.wait() == -signal.SIGHUP


def test_bad_command_line_values_are_reported(init_ns):
    ns = init_ns(extra="cellvm.vsock_port=lots cellvm.bogus=1")
    ns.ask("info")
    log = ns.read_log()
    assert "cellvm.vsock_port: bad value" in log
    assert "cellvm.bogus: unknown key" in log


def test_dns_in_test_mode_leaves_the_hosts_resolv_conf(init_ns):
    # The namespace shares the host's /etc: cellvm.dns must not rewrite it.
    def snapshot():
        try:
            st = os.stat("/etc/resolv.conf")
            with open("/etc/resolv.conf", "rb") as f:
                return f.read(), st.st_ino, st.st_mtime_ns
        except FileNotFoundError:
            return None
    before = snapshot()
    ns = init_ns(extra="cellvm.dns=192.0.2.53")
    ns.ask("info")
    assert "/etc/resolv.conf not written (cellvm.dns=192.0.2.53)" in ns.read_log()
    assert snapshot() == before


def memory_contains(pid, needle):
    """Whether any readable mapping of process pid holds the bytes needle."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(lo)
                if needle in mem.read(hi - lo):
                    return True
            except OSError:  # [vvar] and the like
                pass
    return False


def test_entropy_seed_does_not_stay_in_init_memory(init_ns):
    seed = "c0ffee" * 20
    ns = init_ns(extra=f"cellvm.entropy={seed}")
    ns.ask("info")  # past system_ready: the seed has been handled
    log = ns.read_log()
    # In a namespace the seed would feed the host's pool: it is not credited.
    assert "the cellvm.entropy seed is not credited" in log
    assert seed not in log and f"cellvm.entropy={'*' * len(seed)}" in log
    pid = ns.init_pid()
    # The masked command line is still in memory: the scan does see init's data.
    assert memory_contains(pid, f"cellvm.entropy={'*' * len(seed)}".encode())
    assert not memory_contains(pid, seed.encode())


@pytest.mark.skipif(not os.path.exists(AGENT), reason="build/cellvm-agent not built yet")
def test_real_agent_under_init_reports_boot_stamps_and_requests_power_off(init_ns, request):
    import sys
    sys.path.insert(0, os.path.join(ROOT, "client", "python"))
    from cellvm._wire import Connection

    # init mounts tmpfs over /tmp and /run in the namespace, which would hide
    # binaries of a checkout that lives there: run copies from /var/tmp.
    bindir = tempfile.mkdtemp(prefix="cellvm-bin-", dir="/var/tmp")
    request.addfinalizer(lambda: shutil.rmtree(bindir, ignore_errors=True))
    for name in ("cellvm-agent", "cellvm-executor"):
        shutil.copy2(os.path.join(os.path.dirname(AGENT), name), bindir)
    ns = init_ns(agent=os.path.join(bindir, "cellvm-agent"), agent_args=None)
    deadline = time.monotonic() + 60
    while not os.path.exists(ns.sock):
        assert ns.proc.poll() is None and time.monotonic() < deadline, ns.read_log()
        time.sleep(0.02)
    conn = Connection.connect("unix:" + ns.sock)
    hello = conn.call(0x0001, {"protocol": 1})
    # CELLVM_NET=loopback from init, and the namespace has no interface but lo.
    assert hello["network"] == "loopback"
    boot = hello["boot"]
    assert boot["init_start"] <= boot["agent_exec"] <= boot["agent_start"] <= boot["agent_ready"]
    assert hello["pid"] != 1
    # The host asks the agent for a power-off; the agent asks init (SIGUSR2).
    assert conn.call(0x0032, {"poweroff": True}) == {}
    assert ns.wait(timeout=30) == -signal.SIGINT  # test mode: power-off ends init with SIGINT
    assert "shutdown (power off): User defined signal 2" in ns.read_log()


def boottime_ms():
    # The namespace shares the host's kernel, so init's CLOCK_BOOTTIME is ours.
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME) // 1_000_000


def test_boot_deadline_shuts_down_and_a_plain_signal_does_not_move_it(init_ns):
    ns = init_ns(extra=f"cellvm.shutdown=poweroff cellvm.deadline_ms={boottime_ms() + 2500}")
    ns.ask("info")
    ns.wait_log("deadline in ")
    # kill(1, 40) carries no value: only a sigqueue from root moves the deadline.
    os.kill(ns.init_pid(), 40)
    ns.wait_log("ignored deadline signal")
    t0 = time.monotonic()
    rc = ns.wait(timeout=20)
    assert rc == -signal.SIGINT, (rc, ns.read_log())  # power off, as configured
    log = ns.read_log()
    assert "shutdown (power off): the sandbox's deadline passed" in log
    assert "sync and unmount done" in log
    assert time.monotonic() - t0 < 10


def test_real_agent_relays_set_deadline_extend_shorten(init_ns, request):
    import sys
    sys.path.insert(0, os.path.join(ROOT, "client", "python"))
    from cellvm._wire import AgentError, Connection

    bindir = tempfile.mkdtemp(prefix="cellvm-bin-", dir="/var/tmp")
    request.addfinalizer(lambda: shutil.rmtree(bindir, ignore_errors=True))
    for name in ("cellvm-agent", "cellvm-executor"):
        shutil.copy2(os.path.join(os.path.dirname(AGENT), name), bindir)
    # Boot deadline 6 s away; the host extends it, then shortens it.
    ns = init_ns(agent=os.path.join(bindir, "cellvm-agent"), agent_args=None,
                 extra=f"cellvm.deadline_ms={boottime_ms() + 6000}")
    deadline = time.monotonic() + 60
    while not os.path.exists(ns.sock):
        assert ns.proc.poll() is None and time.monotonic() < deadline, ns.read_log()
        time.sleep(0.02)
    conn = Connection.connect("unix:" + ns.sock)
    conn.call(0x0001, {"protocol": 1})
    with pytest.raises(AgentError) as e:
        conn.call(0x0033, {})
    assert e.value.code == "bad_request" and "timeout_ms" in str(e.value)
    assert conn.call(0x0033, {"timeout_ms": 60_000}) == {}
    ns.wait_log("(set by the agent)")
    import re
    said = re.findall(r"deadline in (\d+) ms \(set by the agent\)", ns.read_log())
    assert said and 59_000 <= int(said[-1]) <= 60_000, ns.read_log()
    time.sleep(7)  # past the boot deadline: it was moved
    assert ns.proc.poll() is None, ns.read_log()
    t0 = time.monotonic()
    assert conn.call(0x0033, {"timeout_ms": 1000}) == {}
    rc = ns.wait(timeout=30)
    took = time.monotonic() - t0
    assert rc == -signal.SIGHUP, (rc, ns.read_log())  # cellvm.shutdown: reboot (default)
    assert 0.9 <= took < 10, took
    assert "the sandbox's deadline passed" in ns.read_log()
