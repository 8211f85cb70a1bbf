"""What tests/test_e2b_api_surface.py found missing from cellvm's SDK and
is now there, against the session's real agent: watch_dir(include_entry=True)
(E2B's FilesystemEvent.entry), read(stream_idle_timeout=...), write(metadata=...)
refused as E2B refuses it on an envd without it, AsyncSandbox.pty, E2B's
create() options of its cloud refused by name, the cloud-only methods (MCP)
raising SandboxException(code="unsupported"), and fork and snapshots refused
for a dev-mode agent."""

import asyncio
import os
import time

import pytest

from cellvm import (
    AsyncCommandHandle,
    AsyncSandbox,
    CommandExitException,
    EntryInfo,
    FilesystemEventType,
    FileType,
    InvalidArgumentException,
    PtySize,
    Sandbox,
    SandboxException,
    SandboxNotFoundException,
    TemplateException,
)


def _wait_for_events(handle, want):
    """get_new_events() until an event of each (name, type) in `want` came
    (the agent's inotify events arrive asynchronously)."""
    events = []
    for _ in range(200):
        events += handle.get_new_events()
        if want <= {(e.name, e.type) for e in events}:
            return events
        time.sleep(0.05)
    raise AssertionError(f"events {want} never came: {events}")


def test_watch_dir_include_entry_gives_each_event_its_entry(sbx, workdir):
    h = sbx.files.watch_dir(workdir, include_entry=True, allow_network_mounts=True)
    sbx.files.write(os.path.join(workdir, "seen.txt"), "abc")
    sbx.files.make_dir(os.path.join(workdir, "sub"))
    sbx.files.write(os.path.join(workdir, "gone.txt"), "x")
    sbx.files.remove(os.path.join(workdir, "gone.txt"))
    events = _wait_for_events(h, {("sub", FilesystemEventType.CREATE),
                                  ("gone.txt", FilesystemEventType.REMOVE)})
    h.stop(request_timeout=5)
    sub = next(e for e in events if e.name == "sub")
    assert isinstance(sub.entry, EntryInfo) and sub.entry.type == FileType.DIR
    assert sub.entry.path == os.path.join(workdir, "sub")
    gone = next(e for e in events if e.name == "gone.txt" and e.type == FilesystemEventType.REMOVE)
    assert gone.entry is None  # what no longer exists has no entry, as in E2B
    seen = [e.entry for e in events if e.name == "seen.txt" and e.entry is not None]
    assert seen and seen[-1].size == 3


def test_watch_dir_without_include_entry_has_no_entry(sbx, workdir):
    h = sbx.files.watch_dir(workdir)
    sbx.files.write(os.path.join(workdir, "a.txt"), "1")
    events = _wait_for_events(h, {("a.txt", FilesystemEventType.CREATE)})
    h.stop()
    assert all(e.entry is None for e in events)


def test_read_stream_takes_stream_idle_timeout(sbx, workdir):
    path = os.path.join(workdir, "big.bin")
    sbx.files.write(path, b"x" * (3 << 20))
    assert sum(len(c) for c in sbx.files.read(path, format="stream", stream_idle_timeout=30)) == 3 << 20
    assert sum(len(c) for c in sbx.files.read(path, format="stream", stream_idle_timeout=0)) == 3 << 20
    assert sbx.files.read(path, format="bytes", stream_idle_timeout=30)[:2] == b"xx"


def test_write_metadata_is_refused_as_e2b_refuses_it_without_xattrs(sbx, workdir):
    path = os.path.join(workdir, "m.txt")
    with pytest.raises(TemplateException, match="metadata"):
        sbx.files.write(path, "1", metadata={"owner": "me"})
    with pytest.raises(TemplateException):
        sbx.files.write_files([{"path": path, "data": "1"}], metadata={"owner": "me"})
    assert not sbx.files.exists(path)
    info = sbx.files.write(path, "1", metadata={}, use_octet_stream=None)
    assert info.metadata is None


def test_invalid_write_metadata_is_invalid_argument_first_as_e2bs(sbx, workdir):
    # E2B's validate_metadata runs before its envd check (E2B's
    # files/test_metadata.py test_write_rejects_invalid_metadata).
    path = os.path.join(workdir, "bad.txt")
    for bad in ({"bad key": "v"}, {"": "v"}, {"good": "bad\nvalue"}, {"k": "é"}):
        with pytest.raises(InvalidArgumentException, match="Invalid metadata"):
            sbx.files.write(path, "x", metadata=bad)
        with pytest.raises(InvalidArgumentException, match="Invalid metadata"):
            sbx.files.write_files([{"path": path, "data": "x"}], metadata=bad)
    assert not sbx.files.exists(path)


def test_async_pty_sends_the_terminals_bytes_to_on_data(agent):
    async def main():
        async with await AsyncSandbox.connect(agent.addr) as sbx:
            data = []
            t = await sbx.pty.create(PtySize(rows=24, cols=80), on_data=data.append, envs={"ABC": "123"})
            assert isinstance(t, AsyncCommandHandle) and t.pid > 0
            await sbx.pty.resize(t.pid, PtySize(rows=30, cols=100))
            await sbx.pty.send_stdin(t.pid, b"echo $ABC-$TERM-$(stty size)\nexit\n")
            r = await t.wait()
            assert r.exit_code == 0
            assert all(isinstance(x, bytes) for x in data)
            assert "123-xterm-256color-30 100\r\n" in b"".join(data).decode()

            t = await sbx.pty.create(PtySize(24, 80), on_data=lambda b: None)
            assert await sbx.pty.kill(t.pid) is True
            with pytest.raises(CommandExitException):
                await t.wait()
            assert await sbx.pty.kill(999999999) is False
    asyncio.run(main())


@pytest.mark.parametrize("option", [
    {"mcp": {"github": {}}},
    {"iam": {"tokens": {}}},
    {"volume_mounts": {"/data": "vol"}},
    {"lifecycle": {"on_timeout": "pause"}},  # a dev-mode agent has no timeout to pause at
])
def test_create_refuses_e2b_cloud_options_by_name(agent, monkeypatch, option):
    monkeypatch.setenv("CELLVM_ADDR", agent.addr)
    with pytest.raises(SandboxException, match=f"create\\({next(iter(option))}=") as ei:
        Sandbox.create(**option)
    assert ei.value.code == "unsupported"


def test_create_checks_lifecycle_as_e2bs_sdk(agent, monkeypatch):
    """E2B's build_lifecycle_config's refusals, with its messages; a
    filesystem-only pause at the timeout is cellvm's refusal (unsupported)."""
    monkeypatch.setenv("CELLVM_ADDR", agent.addr)
    for lifecycle, words in (
            ({"on_timeout": {"action": "kill"}, "auto_resume": True},
             "auto_resume can only be True when on_timeout action is 'pause'"),
            ({"on_timeout": "kill", "auto_resume": True}, "auto_resume can only be True"),
            ({"on_timeout": {"action": "kill", "keep_memory": False}},
             "keep_memory is only allowed when on_timeout action is 'pause'"),
            ({"on_timeout": {"action": "pause", "keep_memory": False}, "auto_resume": True},
             "a filesystem-only snapshot cannot be auto-resumed")):
        with pytest.raises(InvalidArgumentException, match=words):
            Sandbox.create(lifecycle=lifecycle)
    with pytest.raises(SandboxException, match="keep_memory False") as ei:
        Sandbox.create(lifecycle={"on_timeout": {"action": "pause", "keep_memory": False}})
    assert ei.value.code == "unsupported"
    # kill, or no on_timeout, is the default: accepted.
    for lifecycle in ({"on_timeout": "kill"}, {"auto_resume": False}, {"on_timeout": None}):
        Sandbox.create(lifecycle=lifecycle).close()


def test_create_takes_e2bs_arguments_in_e2bs_order(agent, monkeypatch):
    monkeypatch.setenv("CELLVM_ADDR", agent.addr)
    # template, timeout, metadata, envs, secure, allow_internet_access, mcp, network, iam, lifecycle
    with Sandbox.create("base", None, {"who": "pos"}, {"POS": "1"}, True, None, None, None, None,
                        {"on_timeout": "kill"}, None, None) as s:
        assert s.get_info().metadata == {"who": "pos"}
        assert s.commands.run("echo $POS").stdout == "1\n"


def test_cloud_only_methods_say_why(sbx):
    for call in (sbx.get_mcp_url, sbx.get_mcp_token):
        with pytest.raises(SandboxException, match="not supported by cellvm") as ei:
            call()
        assert ei.value.code == "unsupported"
    assert sbx.traffic_access_token is None
    assert Sandbox.default_template == "code-interpreter-v1" and Sandbox.default_sandbox_timeout == 300
    # fork() and create_snapshot() are a micro-VM's (tests/test_cli_fork.py): a
    # dev-mode agent says so.
    for call in (lambda: sbx.fork(), lambda: Sandbox.fork(sbx.sandbox_id),
                 lambda: sbx.create_snapshot(), lambda: Sandbox.create_snapshot(sbx.sandbox_id)):
        with pytest.raises(SandboxException, match="no micro-VM") as ei:
            call()
        assert ei.value.code == "unsupported"
    with pytest.raises(InvalidArgumentException, match="count must be at least 1"):
        sbx.fork(count=0)
    with pytest.raises(InvalidArgumentException, match="Invalid snapshot name"):
        sbx.create_snapshot(name="two words")
    with pytest.raises(SandboxNotFoundException):
        Sandbox.fork("qemu-00000000")
    with pytest.raises(SandboxNotFoundException):
        Sandbox.create_snapshot("qemu-00000000")
    # The store (this worker's, empty): nothing listed, nothing to delete.
    assert sbx.list_snapshots().next_items() == []
    paginator = Sandbox.list_snapshots(name="nothing-here")
    assert paginator.has_next and paginator.next_items() == [] and not paginator.has_next
    assert Sandbox.delete_snapshot("nothing-here") is False


def test_async_cloud_only_methods_say_why(agent):
    async def main():
        async with await AsyncSandbox.connect(agent.addr) as sbx:
            with pytest.raises(SandboxException, match="not supported by cellvm"):
                await sbx.get_mcp_token()
            with pytest.raises(SandboxException, match="no micro-VM"):
                await sbx.create_snapshot()
            assert await sbx.list_snapshots().next_items() == []
            assert await AsyncSandbox.delete_snapshot("nothing-here") is False
            assert sbx.traffic_access_token is None
    asyncio.run(main())


def test_include_entry_and_async_pty_in_the_micro_vm(vm_sandbox):
    """The same over the session's QEMU micro-VM (conftest.vm_sandbox, not
    killed here): a watch with entries in the image's /home/user, and an
    AsyncSandbox.pty running the image's bash."""
    d = "/home/user/surface-additions"
    vm_sandbox.files.make_dir(d)
    h = vm_sandbox.files.watch_dir(d, include_entry=True)
    vm_sandbox.files.write(d + "/v.txt", "hello")
    events = _wait_for_events(h, {("v.txt", FilesystemEventType.CREATE)})
    h.stop()
    entries = [e.entry for e in events if e.name == "v.txt" and e.entry is not None]
    assert entries and entries[-1].path == d + "/v.txt" and entries[-1].owner == "user"

    async def main():
        sbx = AsyncSandbox(vm_sandbox)
        data = []
        t = await sbx.pty.create(PtySize(rows=24, cols=80), on_data=data.append, cwd=d)
        await sbx.pty.send_stdin(t.pid, b"echo in-$(pwd)\nexit\n")
        assert (await t.wait()).exit_code == 0
        assert f"in-{d}\r\n" in b"".join(data).decode()
    asyncio.run(main())
    vm_sandbox.files.remove(d)
