"""E2B API surface that test_e2b_compat's programs do not reach, against a
real agent: the class-level forms of kill/get_info/set_timeout/connect
(E2B's class_method_variant), Sandbox.list's paginator, get_host,
get_metrics, E2B 2.x's exception classes, files.write_files with
WriteEntry, commands.connect after disconnect, and the async versions."""

import asyncio
import datetime as dt
import hashlib
import http.client
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from cellvm import (
    AsyncSandbox,
    CommandExitException,
    CommandResult,
    FileNotFoundException,
    InvalidArgumentException,
    PtySize,
    NotFoundException,
    RateLimitException,
    Sandbox,
    SandboxException,
    TimeoutException,
    SandboxInfo,
    SandboxMetrics,
    SandboxNotFoundException,
    SandboxQuery,
    SandboxState,
    WriteEntry,
    WriteInfo,
)
from cellvm.exceptions import from_agent_error
from cellvm import _wire
import conftest
import http_direct
from conftest import run_e2b_program

MISSING = "unix:/nonexistent/cellvm-e2b-api/agent.sock"


@pytest.fixture(autouse=True)
def no_dev_agent_env(monkeypatch):
    """Sandbox.list() also probes $CELLVM_ADDR: the tests set it themselves."""
    monkeypatch.delenv("CELLVM_ADDR", raising=False)


# --- lifecycle: instance and class forms ------------------------------------

def test_kill_returns_true_then_false_and_ends_the_sandbox(agent):
    sbx = Sandbox.connect(agent.addr)
    assert sbx.is_running() is True
    assert sbx.kill() is True
    assert sbx.is_running() is False
    assert sbx.kill() is False


def test_kill_returns_once_the_process_is_gone(agent):
    # As envd's: `kill -0 PID` right after pty.kill / commands.kill finds no
    # process, not an unreaped zombie (E2B's pty/test_pty_kill.py).
    with Sandbox.connect(agent.addr) as sbx:
        for _ in range(10):
            term = sbx.pty.create(PtySize(80, 24))
            assert sbx.pty.kill(term.pid) is True
            assert sbx.commands.run(f"kill -0 {term.pid} || echo gone").stdout == "gone\n"
            cmd = sbx.commands.run("sleep 30", background=True)
            assert sbx.commands.kill(cmd.pid) is True
            assert sbx.commands.run(f"kill -0 {cmd.pid} || echo gone").stdout == "gone\n"
        assert sbx.pty.kill(999999) is False


def test_a_command_running_when_the_sandbox_is_killed_raises_e2bs_timeout(agent):
    import threading
    sbx = Sandbox.connect(agent.addr)
    timer = threading.Timer(1.0, sbx.kill)
    timer.start()
    try:
        # e2b 2.45's commands say it as e2b.envd.rpc.format_terminated_exception
        # (E2B's tests/sync/sandbox_sync/commands/test_sandbox_killed_during_run.py).
        with pytest.raises(TimeoutException, match="sandbox was killed or reached its end of life"):
            sbx.commands.run("sleep 30 # killed-sandbox", timeout=60)
    finally:
        timer.cancel()
    with Sandbox.connect(agent.addr) as other:  # a foreground command dies with its client
        deadline = time.monotonic() + 5
        while any(p.args[-1] == "sleep 30 # killed-sandbox" for p in other.commands.list()):
            assert time.monotonic() < deadline
            time.sleep(0.02)


def test_class_kill_by_id(agent, fresh_agent):
    a1 = Sandbox.connect(fresh_agent.addr)
    a2 = Sandbox.connect(fresh_agent.addr)
    other = Sandbox.connect(agent.addr)
    try:
        assert Sandbox.kill(fresh_agent.addr) is True   # every Sandbox of this process with that id
        assert a1.is_running() is False and a2.is_running() is False
        assert other.is_running() is True
        assert Sandbox.kill(MISSING) is False           # E2B: False when not found
        # An agent this process has no Sandbox for: a dev agent cannot be
        # stopped from here (a VM under cellvm-init would be powered off).
        with pytest.raises(SandboxException, match="dev mode"):
            Sandbox.kill(fresh_agent.addr)
        assert fresh_agent.proc.poll() is None
    finally:
        other.close()


def test_class_get_info_and_set_timeout(agent):
    with Sandbox.connect(agent.addr) as sbx:
        info = Sandbox.get_info(agent.addr)
        assert isinstance(info, SandboxInfo) and info.sandbox_id == agent.addr
        assert info.state == SandboxState.RUNNING and info.envd_version == sbx.hello["agent_version"]
        assert info.cpu_count == os.cpu_count() and info.memory_mb > 0
        assert sbx.get_info().started_at == info.started_at
        Sandbox.set_timeout(agent.addr, 60)
        sbx.set_timeout(60)
    # No Sandbox of this process has that id now: a fresh connection answers.
    assert Sandbox.get_info(agent.addr).sandbox_id == agent.addr
    with pytest.raises(SandboxNotFoundException, match=f"Sandbox {MISSING} not found"):
        Sandbox.get_info(MISSING)
    with pytest.raises(SandboxNotFoundException):
        Sandbox.set_timeout(MISSING, 60)


def test_connect_forms(agent):
    # E2B's arguments (timeout, api_key, ...) are accepted.
    sbx = Sandbox.connect(agent.addr, timeout=60, api_key="e2b_unused")
    assert sbx.run_code("1 + 1").text == "2"
    sbx.close()
    assert sbx.is_running() is False
    assert sbx.connect() is sbx  # the instance form reconnects
    assert sbx.run_code("2 + 2").text == "4"
    sbx.kill()
    with pytest.raises(SandboxNotFoundException):
        sbx.connect()
    with pytest.raises(SandboxNotFoundException, match="not found") as ei:
        Sandbox.connect(MISSING)
    assert isinstance(ei.value, NotFoundException)


def test_create_with_e2b_template_names_uses_the_dev_agent(agent, monkeypatch):
    """E2B programs name E2B templates and pass create's arguments in E2B's
    order (template, timeout, metadata, envs): with $CELLVM_ADDR set they
    reach that agent."""
    monkeypatch.setenv("CELLVM_ADDR", agent.addr)
    with Sandbox.create("code-interpreter-v1", 120, {"user": "u1"}, {"E2B_X": "1"}) as sbx:
        assert sbx.sandbox_id == agent.addr
        info = sbx.get_info()
        assert info.name == "code-interpreter-v1" and info.metadata == {"user": "u1"}
        assert sbx.commands.run("echo $E2B_X").stdout == "1\n"
    with Sandbox.create(template="base", metadata={"k": "v"}) as sbx:
        assert sbx.get_info().metadata == {"k": "v"}
    with pytest.raises(InvalidArgumentException, match="egress"):
        Sandbox.create(network={"allow_out": ["1.1.1.1"]})


# --- list ----------------------------------------------------------------------

def test_list_pages_filters_and_orders(agent, fresh_agent, monkeypatch):
    old = Sandbox(addr=agent.addr, metadata={"suite": "list", "who": "old"})
    time.sleep(0.01)
    new = Sandbox(addr=fresh_agent.addr, metadata={"suite": "list", "who": "new"})
    try:
        mine = SandboxQuery(metadata={"suite": "list"})
        p = Sandbox.list(query=mine, limit=1)
        assert p.has_next and p.next_token is None
        first = p.next_items()
        assert [i.metadata["who"] for i in first] == ["new"]   # newest first
        assert p.has_next and p.next_token == "1"
        second = p.next_items()
        assert [i.metadata["who"] for i in second] == ["old"] and not p.has_next
        with pytest.raises(Exception, match="No more items to fetch"):
            p.next_items()
        asc = Sandbox.list(query=mine, order="asc").next_items()
        assert [i.sandbox_id for i in asc] == [agent.addr, fresh_agent.addr]
        only = Sandbox.list(query=SandboxQuery(metadata={"who": "old"})).next_items()
        assert [i.sandbox_id for i in only] == [agent.addr]
        assert Sandbox.list(query=SandboxQuery(metadata={"suite": "list"},
                                               state=[SandboxState.PAUSED])).next_items() == []
        later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
        assert Sandbox.list(query=SandboxQuery(metadata={"suite": "list"},
                                               started_after=later)).next_items() == []
        with pytest.raises(InvalidArgumentException, match="Invalid order"):
            Sandbox.list(order="sideways")
        new.kill()
        assert [i.sandbox_id for i in Sandbox.list(query=mine).next_items()] == [agent.addr]
    finally:
        old.close()
        new.close()
    assert Sandbox.list(query=SandboxQuery(metadata={"suite": "list"})).next_items() == []
    # The agent named by $CELLVM_ADDR is listed when it answers.
    monkeypatch.setenv("CELLVM_ADDR", fresh_agent.addr)
    assert fresh_agent.addr in [i.sandbox_id for i in Sandbox.list().next_items()]


# --- get_host, get_metrics, pause ---------------------------------------------

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def net_agent():
    """An agent whose user code may open sockets (--network allow)."""
    a = conftest.AgentProcess("--network", "allow", preload="")
    yield a
    a.stop()
    assert a.sanitizer_report() is None, a.sanitizer_report()


def test_get_host_reaches_a_server_in_the_sandbox(net_agent):
    port = _free_port()
    work = os.path.join(net_agent.workdir, "site")  # files.write makes it, as the sandbox user
    with Sandbox.connect(net_agent.addr) as sbx:
        sbx.files.write(os.path.join(work, "index.html"), "served from the sandbox")
        server = sbx.commands.run(f"exec python3 -m http.server {port} --bind 127.0.0.1", cwd=work,
                                  background=True, timeout=0)
        try:
            host = sbx.get_host(port)
            assert host == f"localhost:{port}"
            deadline = time.monotonic() + 20
            while True:
                try:
                    body = urllib.request.urlopen(f"http://{host}/index.html", timeout=5).read()
                    break
                except OSError:
                    assert server.exit_code is None, server.stderr
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            assert body == b"served from the sandbox"
        finally:
            server.kill()


# --- E2B's network options (cellvm.network) -----------------------------------

def test_e2b_network_options_on_a_sandbox_without_egress(agent, monkeypatch):
    """An agent whose user code has no network (--network none): E2B's options
    that hold there are accepted, with E2B's meaning; an allow rule is refused
    with the rule named, and nothing is left connected."""
    monkeypatch.setenv("CELLVM_ADDR", agent.addr)
    ok = [dict(secure=True, network={"allow_public_traffic": False}),
          dict(secure=False, network={"allow_public_traffic": True, "mask_request_host": "x"}),
          dict(allow_internet_access=False),
          dict(network={"deny_out": ["0.0.0.0/0"]}),
          dict(network={"deny_out": lambda ctx: [ctx.all_traffic]}),
          dict(network={"deny_out": ["8.8.8.8", "example.com"]}),
          dict(network=None)]
    for kw in ok:
        with Sandbox.create("code-interpreter-v1", **kw) as sbx:
            assert sbx.run_code("6 * 7").text == "42", kw
            assert sbx._conn.hello["network"] == "none"
    before = len(os.listdir("/proc/self/fd"))
    refused = [({"allow_out": ["1.1.1.1"], "deny_out": ["0.0.0.0/0"]},
                r"egress rule allow_out \['1\.1\.1\.1'\] cannot be enforced: the agent at "
                r"unix:.* \(user code's network: none\) has no egress at all"),
               ({"allow_out": ["0.0.0.0/0"]}, r"allow_out \['0\.0\.0\.0/0'\]"),
               ({"deny_out": "8.8.8.8"}, r"network\['deny_out'\] must be a list"),
               ({"alow_out": ["1.1.1.1"]}, r"unknown option\(s\) alow_out"),
               ({"rules": {"api.example.com": [{}]}}, r"network\['rules'\].*egress proxy"),
               ({"allow_public_traffic": "no"}, r"allow_public_traffic'\] must be True or False")]
    for network, message in refused:
        with pytest.raises(InvalidArgumentException, match=message):
            Sandbox.create("code-interpreter-v1", network=network)
    with pytest.raises(InvalidArgumentException, match="secure must be True or False"):
        Sandbox.create(secure="yes")
    with pytest.raises(InvalidArgumentException,
                       match=r"allow_internet_access=True cannot be honoured: the agent at "):
        Sandbox.create(allow_internet_access=True)
    assert len(os.listdir("/proc/self/fd")) == before  # the refused ones were closed


def test_e2b_network_names_in_an_e2b_program(agent, tmp_path):
    """E2B's ALL_TRAFFIC and SandboxNetworkOpts, by E2B's module names."""
    r = run_e2b_program(agent, tmp_path, (
        "from e2b import ALL_TRAFFIC, SandboxNetworkOpts\n"
        "from e2b.sandbox.sandbox_api import SandboxNetworkOpts as FromApi\n"
        "from e2b_code_interpreter import Sandbox\n"
        "assert FromApi is SandboxNetworkOpts\n"
        "with Sandbox.create(network=SandboxNetworkOpts(deny_out=[ALL_TRAFFIC])) as s:\n"
        "    print(ALL_TRAFFIC, s.run_code('6 * 7').text)\n"), "e2b-network-names")
    assert r.returncode == 0 and r.stdout == "0.0.0.0/0 42\n", r.stderr


def test_e2b_network_options_on_a_sandbox_with_all_egress(net_agent, monkeypatch):
    """--network allow: user code reaches every address, so a deny rule (or
    allow_internet_access=False) cannot be enforced; one allow_out covers is."""
    monkeypatch.setenv("CELLVM_ADDR", net_agent.addr)
    for kw in (dict(network={"allow_public_traffic": False}, secure=True),
               dict(allow_internet_access=True),
               dict(network={"allow_out": ["1.1.1.1"]}),
               dict(network={"deny_out": ["8.8.8.8"], "allow_out": ["8.8.0.0/16"]}),
               dict(network={"deny_out": ["0.0.0.0/0"], "allow_out": ["0.0.0.0/0"]})):
        with Sandbox.create(**kw) as sbx:
            assert sbx._conn.hello["network"] == "allow", kw
    for kw, message in ((dict(network={"deny_out": ["8.8.8.0/24"]}),
                         r"egress rule deny_out \['8\.8\.8\.0/24'\] cannot be enforced: the agent "
                         r"at unix:.* lets user code reach every address"),
                        (dict(network={"deny_out": ["0.0.0.0/0"], "allow_out": ["1.1.1.1"]}),
                         r"deny_out \['0\.0\.0\.0/0'\]"),
                        (dict(allow_internet_access=False),
                         r"allow_internet_access=False cannot be enforced")):
        with pytest.raises(InvalidArgumentException, match=message):
            Sandbox.create(**kw)


def test_e2b_network_options_are_checked_before_a_micro_vm_boots(monkeypatch):
    """The check of a boot comes before QEMU starts: a rule the host cannot
    parse (QEMU's network='none' sandboxes get their rules enforced by the
    host, test_sdk_egress.py), a Firecracker micro-VM, which has no egress to
    allow an address with, and QEMU's NAT, which cannot deny one."""
    monkeypatch.delenv("CELLVM_ADDR", raising=False)
    before = conftest.qemu_pids()
    with pytest.raises(InvalidArgumentException,
                       match=r"--egress: network\.allowOut: 10\.0\.0\.1/99 is no IP address"):
        Sandbox.create(conftest.IMAGE, network={"allow_out": ["10.0.0.1/99"]})
    with pytest.raises(InvalidArgumentException,
                       match=r"allow_out \['10\.0\.0\.1'\] cannot be enforced: a micro-VM with "
                             r"network='none' has no egress"):
        Sandbox.create(conftest.IMAGE, vmm="firecracker", network={"allow_out": ["10.0.0.1"]})
    with pytest.raises(InvalidArgumentException,
                       match=r"allow_internet_access=False cannot be enforced: a micro-VM with "
                             r"network='user'"):
        Sandbox.create(conftest.IMAGE, network="user", allow_internet_access=False)
    assert conftest.qemu_pids() <= before


def test_a_callable_selector_is_called_once_per_create(monkeypatch):
    """E2B's allow_out/deny_out callables are resolved once per
    Sandbox.create, on each of its paths: rules the host enforces (QEMU's
    network='none'), options that ask for no egress, another VMM's check and
    a refused rule (no VM boots: _boot is stubbed, giving the rules it got)."""
    monkeypatch.delenv("CELLVM_ADDR", raising=False)
    monkeypatch.setattr(Sandbox, "_boot", classmethod(lambda cls, **launch: launch["egress"]))
    calls = []

    def selector(entries):
        return lambda ctx: calls.append(entries) or entries

    for kw, egress in (
            (dict(network={"allow_out": selector(["1.1.1.1"]),
                           "deny_out": selector(["0.0.0.0/0"])}),
             {"allowOut": ["1.1.1.1"], "denyOut": ["0.0.0.0/0"]}),
            (dict(network={"deny_out": selector(["8.8.8.8"])}),
             {"allowOut": [], "denyOut": ["8.8.8.8"]}),
            (dict(network={"deny_out": selector(["8.8.8.8"])}, allow_internet_access=False), None),
            (dict(network={"deny_out": selector(["8.8.8.8"])}, vmm="firecracker"), None)):
        calls.clear()
        assert Sandbox.create(**kw) == egress, kw
        assert len(calls) == len(kw["network"]), (kw, calls)
    calls.clear()
    with pytest.raises(InvalidArgumentException, match=r"allow_out \['1\.1\.1\.1'\] cannot"):
        Sandbox.create(vmm="firecracker", network={"allow_out": selector(["1.1.1.1"])})
    assert calls == [["1.1.1.1"]]


def test_get_metrics_and_pause(sbx):
    [m] = sbx.get_metrics()
    assert isinstance(m, SandboxMetrics)
    assert m.cpu_count == os.cpu_count() and 0.0 <= m.cpu_used_pct <= 100.0
    assert 0 < m.mem_used < m.mem_total and m.mem_cache >= 0
    assert 0 < m.disk_used < m.disk_total
    assert abs((dt.datetime.now(dt.timezone.utc) - m.timestamp).total_seconds()) < 30
    past = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)
    assert sbx.get_metrics(end=past) == []
    with pytest.raises(SandboxException, match="pause is not supported"):
        sbx.pause()
    [m2] = Sandbox.get_metrics(sbx.sandbox_id)
    assert m2.mem_total == m.mem_total
    with pytest.raises(SandboxNotFoundException):
        Sandbox.get_metrics(MISSING)


def test_download_and_upload_urls_are_signed_per_file_and_operation(agent, workdir, capfd):
    """E2B's download_url()/upload_url(): URLs of a loopback HTTP server over
    the sandbox's connection (cellvm/file_urls.py), signed as E2B signs them:
    a file streams back whole; a multipart and an octet-stream upload write
    their files and answer E2B's entries; a URL whose signature, file or
    operation is another, or whose time is up, is refused with envd's 401
    body; a missing file is 404; a closed Sandbox's URLs answer nothing."""
    sbx = Sandbox(addr=agent.addr)
    path = os.path.join(workdir, "url.bin")
    content = os.urandom(3 << 20)
    sbx.files.write(path, content)
    url = sbx.download_url(path)
    assert url.startswith("http://127.0.0.1:") and "signature=v1_" in url
    assert http_direct.request(url) == (200, content)
    assert http_direct.request(sbx.download_url(path, use_signature_expiration=120)) == \
        (200, content)
    status, body = http_direct.request(sbx.download_url(path, use_signature_expiration=-120))
    assert (status, json.loads(body)) == (401, {"code": 401, "message": "signature is already expired"})
    for bad in (url.replace("signature=v1_", "signature=v1_x"),
                url.replace("url.bin", "other.bin"),
                re.sub(r"&signature=[^&]*", "", url)):
        status, body = http_direct.request(bad)
        assert status == 401 and json.loads(body)["code"] == 401, (bad, body)
    status, body = http_direct.request(sbx.download_url(path + ".missing"))
    assert status == 404 and json.loads(body)["code"] == 404, body
    assert http_direct.request(url, data=b"x", method="POST")[0] == 401  # a read URL writes nothing
    # A client that goes away mid-file: the read ends, nothing on stderr, the next is served.
    split = urllib.parse.urlsplit(url)
    with socket.create_connection((split.hostname, split.port), timeout=30) as c:
        c.sendall(f"GET {split.path}?{split.query} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert c.recv(4096).startswith(b"HTTP/1.1 200")
    assert http_direct.request(url) == (200, content)

    up = os.path.join(workdir, "up.txt")
    boundary = "cellvmboundary"
    form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"up.txt\"\r\n"
            f"Content-Type: text/plain\r\n\r\nuploaded\r\n--{boundary}--\r\n").encode()
    status, body = http_direct.request(
        sbx.upload_url(up), data=form,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert status == 200, body
    assert json.loads(body) == [{"name": "up.txt", "type": "file", "path": up}]
    assert sbx.files.read(up) == "uploaded"
    status, body = http_direct.request(sbx.upload_url(up), data=b"raw bytes",
                                       headers={"Content-Type": "application/octet-stream"})
    assert status == 200 and sbx.files.read(up) == "raw bytes", body
    assert http_direct.request(sbx.upload_url(up), data=b"",
                               headers={"Content-Type": "multipart/form-data"})[0] == 400
    # Uploads stream (cellvm/upload_body.py): curl's -F of 6 MiB (with its
    # Expect: 100-continue), a chunked body, and a client that leaves mid-body,
    # which fails the write and leaves the file as it was.
    big = os.urandom(6 << 20)
    local = os.path.join(workdir, "big-local.bin")
    with open(local, "wb") as f:
        f.write(big)
    r = subprocess.run(["curl", "-sS", "--noproxy", "*", "-F", f"file=@{local}", sbx.upload_url(up)],
                       capture_output=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)[0]["path"] == up, r
    assert sbx.files.read(up, format="bytes") == big
    split = urllib.parse.urlsplit(sbx.upload_url(up))
    c = http.client.HTTPConnection(split.hostname, split.port, timeout=60)
    c.request("POST", f"{split.path}?{split.query}", body=iter([b"chunk one, ", b"chunk two"]),
              headers={"Content-Type": "application/octet-stream"}, encode_chunked=True)
    assert c.getresponse().status == 200
    c.close()
    assert sbx.files.read(up) == "chunk one, chunk two"
    with socket.create_connection((split.hostname, split.port), timeout=30) as c:
        c.sendall(f"POST {split.path}?{split.query} HTTP/1.1\r\nHost: x\r\n"
                  f"Content-Type: application/octet-stream\r\nContent-Length: {1 << 20}\r\n\r\n"
                  .encode() + b"z" * 300_000)
        c.shutdown(socket.SHUT_WR)  # the body ends early
        reply = c.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 400") and b"ended before" in reply, reply[:300]
    deadline = time.monotonic() + 30  # the agent drops the write's temporary on the cancel
    while [e.name for e in sbx.files.list(workdir) if ".cellvm-" in e.name]:
        assert time.monotonic() < deadline, sbx.files.list(workdir)
        time.sleep(0.1)
    assert sbx.files.read(up) == "chunk one, chunk two"
    sbx.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=10)
    with pytest.raises(SandboxException, match="closed"):
        sbx.download_url(path)
    assert "Traceback" not in capfd.readouterr().err


def test_e2b_1x_constructor_attaches_by_sandbox_id(agent):
    with Sandbox(sandbox_id=agent.addr, api_key="e2b_unused") as sbx:
        assert sbx.sandbox_id == agent.addr and sbx.run_code("3 * 3").text == "9"


# --- exceptions -------------------------------------------------------------------

def test_e2b_exception_classes(sbx, workdir):
    missing = os.path.join(workdir, "nope.txt")
    for call in (lambda: sbx.files.read(missing), lambda: sbx.files.get_info(missing),
                 lambda: sbx.files.list(missing), lambda: sbx.files.rename(missing, missing + "2")):
        with pytest.raises(FileNotFoundException, match=re.escape(missing)) as ei:
            call()
        assert isinstance(ei.value, NotFoundException)
    sbx.files.remove(missing)  # E2B: no error (envd's os.RemoveAll)
    assert sbx.files.exists(missing) is False
    with pytest.raises(CommandExitException) as ei:
        sbx.commands.run("echo o; echo e >&2; exit 4")
    e = ei.value
    assert isinstance(e, CommandResult) and isinstance(e, SandboxException)
    assert (e.stderr, e.stdout, e.exit_code, e.error) == ("e\n", "o\n", 4, "exit status 4")
    assert str(e) == "Command exited with code 4 and error:\ne\n"
    busy = from_agent_error(_wire.AgentError("busy", "queue full"))
    assert isinstance(busy, RateLimitException) and busy.retry_after is None


# --- files ------------------------------------------------------------------------

def test_write_files_and_read_bytes(sbx, workdir):
    class Entry:  # E2B 1.x's WriteEntry was a dataclass with .path and .data
        def __init__(self, path, data):
            self.path, self.data = path, data

    infos = sbx.files.write_files([
        WriteEntry(path=os.path.join(workdir, "a/one.txt"), data="one"),
        {"path": os.path.join(workdir, "two.bin"), "data": b"\x00\x02"},
        Entry(os.path.join(workdir, "three.txt"), open(__file__, "rb")),
    ], gzip=True, use_octet_stream=True)
    assert [i.name for i in infos] == ["one.txt", "two.bin", "three.txt"]
    assert all(isinstance(i, WriteInfo) for i in infos)
    assert sbx.files.write_files([]) == []
    data = sbx.files.read(os.path.join(workdir, "two.bin"), format="bytes", gzip=True)
    assert isinstance(data, bytearray) and data == b"\x00\x02"  # E2B returns a bytearray
    with open(__file__, "rb") as f:
        assert sbx.files.read(os.path.join(workdir, "three.txt"), format="bytes") == f.read()
    with pytest.raises(InvalidArgumentException, match="Unsupported data type for file x"):
        sbx.files.write("x", 42)
    with pytest.raises(InvalidArgumentException, match="WriteEntry"):
        sbx.files.write_files([{"path": "y"}])
    with pytest.raises(InvalidArgumentException, match="depth should be at least 1"):
        sbx.files.list(workdir, depth=0)


def test_watch_handle_after_stop(sbx, workdir):
    w = sbx.files.watch_dir(workdir)
    sbx.files.write(os.path.join(workdir, "w.txt"), "1")
    deadline = time.monotonic() + 5
    events = []  # the upload's temporary file comes first, then the rename to w.txt
    while not any(e.name == "w.txt" for e in events) and time.monotonic() < deadline:
        events += w.get_new_events()
        time.sleep(0.02)
    assert any(e.name == "w.txt" for e in events), events
    w.stop()
    with pytest.raises(SandboxException, match="The watcher is already stopped"):
        w.get_new_events()


# --- commands -----------------------------------------------------------------------

def _wait_for_file(path, timeout=10):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.02)


def test_commands_list_has_e2b_shape(sbx):
    h = sbx.commands.run("sleep 30 # e2b-shape", background=True)
    try:
        [p] = [p for p in sbx.commands.list() if p.pid == h.pid]
        assert p.cmd == "/bin/bash" and p.args == ["-l", "-c", "sleep 30 # e2b-shape"]
    finally:
        h.kill()


def test_connect_to_a_background_command_whose_client_left(agent, workdir):
    """E2B's flow across programs: one starts a server-like command in the
    background and exits; another connects to the sandbox and follows it."""
    script = ("echo before; until [ -e go ]; do sleep 0.02; done; echo after; echo err >&2; exit 3")
    with Sandbox.connect(agent.addr) as first:
        h = first.commands.run(script, cwd=workdir, background=True)
        for out, _, _ in h:
            if out:
                break
    with Sandbox.connect(agent.addr) as second:
        h2 = second.commands.connect(h.pid)
        assert h2.pid == h.pid
        open(os.path.join(workdir, "go"), "w").close()
        with pytest.raises(CommandExitException) as ei:
            h2.wait()
        assert (ei.value.exit_code, ei.value.stdout, ei.value.stderr) == (3, "after\n", "err\n")
        with pytest.raises(NotFoundException):
            second.commands.connect(h.pid)


def test_connect_after_disconnect_follows_from_then_on(sbx, workdir):
    """E2B's disconnect()/commands.connect(pid): the command keeps running;
    the new handle gets what it writes after connect, not what came before."""
    script = ("echo early; until [ -e go1 ]; do sleep 0.02; done; echo middle; touch wrote-middle; "
              "until [ -e go2 ]; do sleep 0.02; done; echo late; exit 5")
    h = sbx.commands.run(script, cwd=workdir, background=True)
    for out, _, _ in h:
        if out:
            break
    assert h.stdout == "early\n"
    h.disconnect()
    open(os.path.join(workdir, "go1"), "w").close()
    _wait_for_file(os.path.join(workdir, "wrote-middle"))  # "middle" is out while nobody follows
    h2 = sbx.commands.connect(h.pid)
    assert h2.pid == h.pid
    open(os.path.join(workdir, "go2"), "w").close()
    with pytest.raises(CommandExitException) as ei:
        h2.wait()
    assert ei.value.exit_code == 5 and ei.value.stdout == "late\n"
    with pytest.raises(NotFoundException):
        sbx.commands.connect(h.pid)  # it has ended


def test_connect_to_a_command_another_connection_follows(sbx, agent):
    with Sandbox.connect(agent.addr) as other:
        h = other.commands.run("sleep 30", background=True)
        try:
            with pytest.raises(SandboxException, match="another connection follows"):
                sbx.commands.connect(h.pid)
        finally:
            assert sbx.commands.kill(h.pid) is True
    with pytest.raises(NotFoundException, match="not found"):
        sbx.commands.connect(2 ** 30)


def test_handle_stdin_with_request_timeout(sbx):
    # It ends at EOF only: the command may not be gone before close_stdin.
    h = sbx.commands.run("read a; read b; cat >/dev/null; echo $a-$b", background=True, stdin=True)
    h.send_stdin("x\n", request_timeout=5)
    h.send_stdin(b"y\n", 5)
    h.close_stdin(request_timeout=5)
    assert h.wait().stdout == "x-y\n"


# --- async ------------------------------------------------------------------------------

def test_async_class_forms_list_and_connect(agent, fresh_agent, workdir):
    async def main():
        sbx = await AsyncSandbox.connect(fresh_agent.addr, timeout=60)
        info = await AsyncSandbox.get_info(fresh_agent.addr)
        assert info.sandbox_id == fresh_agent.addr
        await AsyncSandbox.set_timeout(fresh_agent.addr, 30)
        assert (await sbx.get_info()).sandbox_id == fresh_agent.addr
        p = AsyncSandbox.list(query=SandboxQuery(state=[SandboxState.RUNNING]))
        assert fresh_agent.addr in [i.sandbox_id for i in await p.next_items()]
        assert not p.has_next
        assert sbx.get_host(8080) == "localhost:8080"
        await sbx.close()
        assert await sbx.is_running() is False
        assert await sbx.connect() is sbx and await sbx.is_running() is True
        assert await AsyncSandbox.kill(fresh_agent.addr) is True
        assert await sbx.is_running() is False
        assert await AsyncSandbox.kill(MISSING) is False
        with pytest.raises(SandboxNotFoundException):
            await AsyncSandbox.get_info(MISSING)

        async with await AsyncSandbox.connect(agent.addr) as s2:
            got = []
            h = await s2.commands.run("echo a; until [ -e go ]; do sleep 0.02; done; echo b",
                                      cwd=workdir, background=True)
            while h.stdout != "a\n":
                await asyncio.sleep(0.02)
            await h.disconnect()
            h2 = await s2.commands.connect(h.pid, on_stdout=got.append)
            open(os.path.join(workdir, "go"), "w").close()
            r = await h2.wait()
            assert r.stdout == "b\n" and got == ["b\n"]
            data = await s2.files.read(os.path.join(workdir, "go"), format="bytes")
            assert isinstance(data, bytearray)
            assert [m.cpu_count for m in await s2.get_metrics()] == [os.cpu_count()]
    asyncio.run(main())


# --- an E2B program through the compat modules --------------------------------------------

E2B_PROGRAM = '''
import os
from e2b import Sandbox as BaseSandbox, SandboxQuery, FileNotFoundException
from e2b.exceptions import NotFoundException, SandboxException
from e2b.sandbox.filesystem.filesystem import WriteEntry
from e2b_code_interpreter import Sandbox
from e2b_code_interpreter.models import Execution

work = os.environ["E2B_PROGRAM_DIR"]
sbx = Sandbox.create(metadata={"job": "compat"})
print(isinstance(sbx.run_code("1"), Execution))
sbx.files.write_files([WriteEntry(path=work + "/a.txt", data="A"), WriteEntry(path=work + "/b.txt", data="B")])
print(sorted(e.name for e in sbx.files.list(work)))
try:
    sbx.files.read(work + "/missing")
except FileNotFoundException:
    print("missing")
paginator = Sandbox.list(query=SandboxQuery(metadata={"job": "compat"}))
while paginator.has_next:
    print([s.metadata for s in paginator.next_items()])
same = Sandbox.connect(sbx.sandbox_id)
print(same.run_code("2 + 3").text)
print(Sandbox.kill(sbx.sandbox_id))
print(sbx.is_running(), same.is_running())
'''


def test_an_e2b_program_using_class_methods_and_list(agent, tmp_path):
    r = run_e2b_program(agent, tmp_path, E2B_PROGRAM, "e2b-api-program")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["True", "['a.txt', 'b.txt']", "missing", "[{'job': 'compat'}]",
                                     "5", "True", "False False"]


# --- a booted micro-VM (the session's) ------------------------------------------------------

def test_connect_by_id_to_a_booted_vm_shares_its_connection(vm_sandbox):
    """Sandbox.connect(sbx.sandbox_id) of a VM this process booted works
    whatever the channel (QEMU's serial socket takes one client): it shares
    the connection; closing it leaves the VM and its owner alone. get_info
    reports the VM; get_host gives the owner's listener for the port, and
    refuses once the view is closed."""
    view = Sandbox.connect(vm_sandbox.sandbox_id)
    # A context of its own: the session VM's default context belongs to
    # test_vm_e2e, whose first cell must be execution 1.
    ctx = view.create_code_context()
    try:
        assert view.sandbox_id == vm_sandbox.sandbox_id and view.vm is vm_sandbox.vm
        assert view.run_code("6 * 7", context=ctx).text == "42"
        info = view.get_info()
        assert info.cpu_count == vm_sandbox.vm.vcpus and info.memory_mb == conftest.SESSION_VM_MEMORY_MB
        assert info.template_id == vm_sandbox.vm.image
        assert vm_sandbox.sandbox_id in [i.sandbox_id for i in Sandbox.list().next_items()]
        assert view.get_host(8000) == vm_sandbox.get_host(8000)
        [m] = view.get_metrics()
        assert m.cpu_count == vm_sandbox.vm.vcpus and m.mem_total <= conftest.SESSION_VM_MEMORY_MB << 20
    finally:
        view.close()
    assert view.is_running() is False
    with pytest.raises(SandboxException, match="closed"):
        view.get_host(8000)
    assert vm_sandbox.is_running() is True and vm_sandbox.run_code("1 + 1", context=ctx).text == "2"
    vm_sandbox.remove_code_context(ctx)


GUEST_SERVER = """
import hashlib, http.server, sys
BIG = bytes(range(256)) * (3 << 12)  # 3 MiB
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the guest" if self.path == "/" else BIG
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        data = self.rfile.read(int(self.headers["Content-Length"]))
        body = hashlib.sha256(data).hexdigest().encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_get_host_of_a_vm_tunnels_to_the_guest_port(vm_sandbox):
    """get_host(port) of a micro-VM, as E2B programs reach a web app they
    started in the sandbox: a listener on this host's loopback tunnelled
    through the agent (cellvm/ports.py, PORT_OPEN) to the port on the guest's
    loopback, with no guest network. A page, 3 MiB each way (past the 256 KiB
    window the agent acknowledges), two clients at once; the same port gives
    the same host; a port nothing listens on closes the connection."""
    port = 8123
    vm_sandbox.files.write("/tmp/guest_server.py", GUEST_SERVER)
    server = vm_sandbox.commands.run(f"python3 /tmp/guest_server.py {port}", background=True)
    try:
        host = vm_sandbox.get_host(port)
        assert host.startswith("127.0.0.1:") and vm_sandbox.get_host(port) == host
        assert http_direct.request_once_up(f"http://{host}/", timeout=30) == \
            (200, b"hello from the guest")
        big = bytes(range(256)) * (3 << 12)
        got = {}

        def fetch(i):
            got[i] = http_direct.request(f"http://{host}/big")
        threads = [threading.Thread(target=fetch, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        assert got == {0: (200, big), 1: (200, big)}
        upload = os.urandom(3 << 20)
        assert http_direct.request(f"http://{host}/", data=upload, method="POST") == \
            (200, hashlib.sha256(upload).hexdigest().encode())

        with socket.create_connection(vm_sandbox.get_host(port + 1).split(":"), timeout=30) as c:
            assert c.recv(1) == b""  # nothing listens there: closed
    finally:
        server.kill()
