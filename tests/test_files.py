"""sandbox.files against a real agent: every call, big round trips, atomicity, errors, watches."""

import datetime
import hashlib
import os
import stat
import time

import pytest

from cellvm import (
    EntryInfo,
    FilesystemEventType,
    FileType,
    InvalidArgumentException,
    NotFoundException,
    Sandbox,
    SandboxException,
    WriteInfo,
    _wire,
)
from cellvm import files as files_mod


def test_reading_a_fifo_never_blocks_the_agent(sbx, workdir):
    # The agent opens a file to read without blocking: a FIFO with no writer
    # reads as empty at once. A blocking open froze the whole agent (every
    # later request of the sandbox waited for a writer that never came).
    p = os.path.join(workdir, "fifo")
    os.mkfifo(p, 0o666)
    start = time.monotonic()
    assert sbx.files.read(p, request_timeout=20) == ""
    assert time.monotonic() - start < 10
    assert sbx.run_code("1 + 1").text == "2"


def test_write_read_text_bytes_stream(sbx, workdir):
    p = os.path.join(workdir, "a.txt")
    info = sbx.files.write(p, "héllo\n")
    assert isinstance(info, WriteInfo)
    assert info == WriteInfo(name="a.txt", type=FileType.FILE, path=p)
    assert sbx.files.read(p) == "héllo\n"
    assert sbx.files.read(p, format="bytes") == "héllo\n".encode()
    assert b"".join(sbx.files.read(p, format="stream")) == "héllo\n".encode()
    # Not UTF-8 (a PNG's header, Latin-1): E2B's SDK reads the text as httpx
    # does, each bad byte a U+FFFD, where a strict decode would raise.
    sbx.files.write(p + ".bin", bytes([0x89, 0x50, 0x4E, 0x47, 0xFF]) + "café".encode("latin-1"))
    assert sbx.files.read(p + ".bin") == "\ufffdPNG\ufffdcaf\ufffd"
    with open(p, "rb") as f:
        assert f.read() == "héllo\n".encode()
    # Replacing keeps the mode; an empty write empties the file.
    os.chmod(p, 0o600)
    sbx.files.write(p, b"")
    assert sbx.files.read(p, format="bytes") == b""
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600


def test_a_stream_is_a_context_manager_as_e2bs(sbx, workdir):
    # E2B's FileStreamReader: `with files.read(p, format="stream") as s:`
    # (tests/sync/sandbox_sync/files/test_read.py); close() ends it early.
    p = os.path.join(workdir, "s.bin")
    data = os.urandom(3 * files_mod.CHUNK + 7)
    sbx.files.write(p, data)
    with sbx.files.read(p, format="stream") as stream:
        assert b"".join(stream) == data
    stream = sbx.files.read(p, format="stream")
    assert data.startswith(next(stream))
    stream.close()
    stream.close()  # twice is harmless
    with pytest.raises(StopIteration):
        next(stream)
    assert sbx.files.read(p, format="bytes") == data  # the connection is still good


def test_relative_paths_are_under_the_home(sbx, agent):
    sbx.files.write("rel-file.txt", "x")
    assert open(os.path.join(agent.workdir, "rel-file.txt")).read() == "x"
    assert sbx.files.get_info("rel-file.txt").path == os.path.join(agent.workdir, "rel-file.txt")


def test_write_file_object(sbx, workdir):
    p = os.path.join(workdir, "obj.bin")
    src = os.path.join(workdir, "src.bin")
    data = os.urandom(3 * files_mod.CHUNK + 17)
    with open(src, "wb") as f:
        f.write(data)
    with open(src, "rb") as f:
        sbx.files.write(p, f)
    assert sbx.files.read(p, format="bytes") == data


def test_64mib_round_trip_checksum(sbx, workdir):
    data = os.urandom(64 * 1024 * 1024)
    p = os.path.join(workdir, "big.bin")
    sbx.files.write(p, data)
    with open(p, "rb") as f:
        assert hashlib.sha256(f.read()).digest() == hashlib.sha256(data).digest()
    h = hashlib.sha256()
    n = 0
    for chunk in sbx.files.read(p, format="stream"):
        assert len(chunk) <= files_mod.CHUNK
        h.update(chunk)
        n += len(chunk)
    assert n == len(data) and h.digest() == hashlib.sha256(data).digest()
    assert sbx.files.read(p, format="bytes") == data


def test_list_get_info_exists(sbx, workdir):
    sbx.files.make_dir(os.path.join(workdir, "d/e"))
    sbx.files.write(os.path.join(workdir, "d/f.txt"), "12345")
    sbx.files.write(os.path.join(workdir, "d/e/g.txt"), "1")
    os.symlink("f.txt", os.path.join(workdir, "d/link"))
    top = sbx.files.list(os.path.join(workdir, "d"))
    assert [e.name for e in top] == ["e", "f.txt", "link"]
    e, f, link = top
    assert isinstance(f, EntryInfo)
    assert e.type == FileType.DIR and f.type == FileType.FILE
    assert f.size == 5 and f.path == os.path.join(workdir, "d/f.txt")
    assert f.mode == 0o644 and f.permissions == "-rw-r--r--"
    assert e.permissions.startswith("d")
    assert f.owner and f.group
    # aware UTC, as e2b 2.45's (E2B's tests/sync/sandbox_sync/files/test_info.py)
    assert f.modified_time.tzinfo == datetime.timezone.utc
    mtime = f.modified_time.timestamp()
    assert abs(mtime - os.stat(os.path.join(workdir, "d/f.txt")).st_mtime) < 1e-3
    # E2B (envd shared/pkg/filesystem/entry.go): the target with every link
    # resolved, and the target's type and mode.
    assert link.symlink_target == os.path.join(workdir, "d/f.txt") and link.type == FileType.FILE
    assert link.mode == 0o644 and link.permissions == "Lrwxrwxrwx"
    deep = sbx.files.list(os.path.join(workdir, "d"), depth=2)
    assert sorted(x.path[len(workdir) + 1:] for x in deep) == ["d/e", "d/e/g.txt", "d/f.txt", "d/link"]
    assert sbx.files.exists(os.path.join(workdir, "d/f.txt"))
    assert not sbx.files.exists(os.path.join(workdir, "d/nope"))
    info = sbx.files.get_info(os.path.join(workdir, "d/e"))
    assert info.type == FileType.DIR and info.name == "e"
    with pytest.raises(InvalidArgumentException, match="depth should be at least 1"):
        sbx.files.list(workdir, depth=0)


def test_remove_rename_make_dir(sbx, workdir):
    d = os.path.join(workdir, "x/y/z")
    assert sbx.files.make_dir(d) is True
    assert sbx.files.make_dir(d) is False
    assert os.path.isdir(d)
    sbx.files.write(os.path.join(d, "f"), "1")
    moved = sbx.files.rename(os.path.join(d, "f"), os.path.join(workdir, "g"))
    assert moved.name == "g" and moved.type == FileType.FILE and moved.size == 1
    assert not os.path.exists(os.path.join(d, "f"))
    sbx.files.remove(os.path.join(workdir, "g"))
    assert not os.path.exists(os.path.join(workdir, "g"))
    sbx.files.remove(os.path.join(workdir, "x"))  # recursive
    assert not os.path.exists(os.path.join(workdir, "x"))
    # As E2B's envd (move.go): the destination's missing directories are created.
    sbx.files.write(os.path.join(workdir, "h"), "2")
    moved = sbx.files.rename(os.path.join(workdir, "h"), os.path.join(workdir, "new/dirs/h"))
    assert moved.path == os.path.join(workdir, "new/dirs/h") and open(moved.path).read() == "2"


def test_errors_name_path_and_errno(sbx, workdir):
    missing = os.path.join(workdir, "missing.txt")
    # The errors E2B words itself have E2B's (envd's) message; the others
    # name the path and the errno.
    with pytest.raises(NotFoundException) as ei:
        sbx.files.read(missing)
    assert str(ei.value) == f"path '{missing}' does not exist"
    with pytest.raises(NotFoundException, match="does not exist"):
        sbx.files.read(missing, format="stream")
    with pytest.raises(NotFoundException) as ei:
        sbx.files.get_info(missing)
    assert str(ei.value) == f"file not found: lstat {missing}: no such file or directory"
    # As E2B's (os.RemoveAll): removing what does not exist is no error.
    assert sbx.files.remove(missing) is None
    with pytest.raises(NotFoundException, match="ENOENT"):
        sbx.files.watch_dir(missing)
    # As E2B's files.write: the directories a new file's path names are created.
    sbx.files.write(os.path.join(workdir, "no/such/dir/f"), "x")
    assert open(os.path.join(workdir, "no/such/dir/f")).read() == "x"
    f = os.path.join(workdir, "plain")
    sbx.files.write(f, "x")
    with pytest.raises(InvalidArgumentException, match="ENOTDIR"):
        sbx.files.write(os.path.join(f, "below-a-file"), "x")
    with pytest.raises(InvalidArgumentException, match="^path is not a directory: "):
        sbx.files.list(f)
    with pytest.raises(InvalidArgumentException, match="^path already exists but it is not a directory: "):
        sbx.files.make_dir(f)
    with pytest.raises(InvalidArgumentException, match="ENOTDIR"):
        sbx.files.make_dir(os.path.join(f, "below-a-file"))
    with pytest.raises(InvalidArgumentException) as ei:
        sbx.files.read(workdir)
    assert str(ei.value) == f"path '{workdir}' is a directory"  # envd's download.go
    with pytest.raises(InvalidArgumentException) as ei:
        sbx.files.write(workdir, "x")
    assert str(ei.value) == f"path is a directory: {workdir}"  # envd's upload.go
    with pytest.raises(NotFoundException, match="no user"):
        sbx.files.read(f, user="no-such-user-xyz")


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs a root agent")
def test_operations_use_the_users_credentials(sbx, workdir, agent):
    for d in (agent.dir, agent.workdir):  # mkdtemp makes 0700: let the user get through
        os.chmod(d, 0o711)
    secret = os.path.join(workdir, "secret")
    sbx.files.write(secret, "s", user="root")
    os.chmod(secret, 0o600)
    os.chmod(workdir, 0o755)
    with pytest.raises(SandboxException) as ei:
        sbx.files.read(secret, user="nobody")
    assert ei.value.code == "permission_denied" and "EACCES" in str(ei.value) and secret in str(ei.value)
    with pytest.raises(SandboxException, match="EACCES"):
        sbx.files.write(os.path.join(workdir, "new"), "x", user="nobody")
    assert not os.path.exists(os.path.join(workdir, "new"))
    assert sbx.files.read(secret, user="root") == "s"
    # A file a user writes belongs to that user.
    open_dir = os.path.join(workdir, "open")
    os.mkdir(open_dir)
    os.chmod(open_dir, 0o777)
    sbx.files.write(os.path.join(open_dir, "mine"), "m", user="nobody")
    assert os.stat(os.path.join(open_dir, "mine")).st_uid == 65534
    assert sbx.files.get_info(os.path.join(open_dir, "mine")).owner == "nobody"


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs a root agent")
def test_missing_parents_are_made_for_the_user_as_envd(sbx, workdir, agent):
    """envd's EnsureDirs: a missing parent the user could not make (its parent
    is root's 0755) is made by root and given to the user; through a symlink the
    user could plant, the user's own EACCES stays."""
    for d in (agent.dir, agent.workdir):
        os.chmod(d, 0o711)
    os.chmod(workdir, 0o755)  # root's, not writable by nobody
    deep = os.path.join(workdir, "made", "for", "nobody.txt")
    sbx.files.write(deep, "n", user="nobody")
    for d in (os.path.join(workdir, "made"), os.path.join(workdir, "made", "for")):
        st = os.stat(d)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (65534, 65534, 0o755), d
    assert os.stat(deep).st_uid == 65534
    assert sbx.files.make_dir(os.path.join(workdir, "dir-for", "nobody"), user="nobody") is True
    assert os.stat(os.path.join(workdir, "dir-for")).st_uid == 65534
    sbx.files.rename(deep, os.path.join(workdir, "moved", "n.txt"), user="nobody")
    assert os.stat(os.path.join(workdir, "moved")).st_uid == 65534
    # A link the user made, pointing at root's directory: no root mkdir through it.
    target = os.path.join(workdir, "roots")
    os.mkdir(target, 0o755)
    link = os.path.join(workdir, "made", "link")
    os.symlink(target, link)
    os.lchown(link, 65534, 65534)
    with pytest.raises(SandboxException, match="EACCES"):
        sbx.files.write(os.path.join(link, "sub", "f"), "x", user="nobody")
    assert os.listdir(target) == []


def _raw_upload_start(addr, path, first_chunk):
    """A bare connection that starts an upload and sends part of it."""
    c = _wire.Connection.connect(addr)
    req = c.request(files_mod.FILE_WRITE, {"path": path})
    files_mod.Filesystem._send_chunk(None, c, req.id, first_chunk, eof=False)
    return c, req


def _leftovers(d):
    return [n for n in os.listdir(d) if ".cellvm-" in n]


def test_atomic_under_dropped_connection(fresh_agent):
    d = os.path.join(fresh_agent.workdir, "atomic")
    os.mkdir(d)
    fresh_agent.give_to_sandbox_user(d)
    p = os.path.join(d, "f.txt")
    with Sandbox.connect(fresh_agent.addr) as sbx:
        sbx.files.write(p, "old content")
        c, _ = _raw_upload_start(fresh_agent.addr, p, b"new partial " * 100000)
        deadline = time.monotonic() + 5
        while not _leftovers(d) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _leftovers(d), "the upload should be in a temporary file while it runs"
        assert open(p).read() == "old content"
        c.close()  # dropped mid-write
        deadline = time.monotonic() + 5
        while _leftovers(d) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _leftovers(d) == []
        assert sbx.files.read(p) == "old content"
        # A new file interrupted leaves nothing at all.
        c, _ = _raw_upload_start(fresh_agent.addr, os.path.join(d, "new.txt"), b"x" * 1000)
        c.close()
        time.sleep(0.2)
        assert sorted(os.listdir(d)) == ["f.txt"]


def test_atomic_under_cancel(sbx, workdir, agent):
    p = os.path.join(workdir, "f.txt")
    sbx.files.write(p, "old")
    c, req = _raw_upload_start(agent.addr, p, b"partial")
    c.call(_wire.CANCEL, {"id": req.id})
    msgs = list(req.messages(5))
    assert msgs[-1][0] == _wire.ERROR and msgs[-1][1]["code"] == "cancelled"
    # Chunks still on their way after the end are ignored, not answered.
    files_mod.Filesystem._send_chunk(None, c, req.id, b"late", eof=True)
    assert c.call(_wire.PING, {})["time_ns"] > 0
    c.close()
    assert open(p).read() == "old" and _leftovers(workdir) == []


def _events_until(handle, want, timeout=5):
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen += [(e.name, e.type) for e in handle.get_new_events()]
        if all(w in seen for w in want):
            return seen
        time.sleep(0.02)
    return seen


def test_watch_dir_events(sbx, workdir):
    h = sbx.files.watch_dir(workdir)
    try:
        p = os.path.join(workdir, "w.txt")
        sbx.files.write(p, "1")  # events under the name, as envd's in-place write
        with open(p, "a") as f:
            f.write("more")
        os.chmod(p, 0o640)
        os.rename(p, os.path.join(workdir, "w2.txt"))
        os.unlink(os.path.join(workdir, "w2.txt"))
        T = FilesystemEventType
        want = [("w.txt", T.CREATE), ("w.txt", T.WRITE), ("w.txt", T.CHMOD), ("w.txt", T.RENAME),
                ("w2.txt", T.CREATE), ("w2.txt", T.REMOVE)]
        seen = _events_until(h, want)
        for w in want:
            assert w in seen, (w, seen)
    finally:
        h.stop()
    # Stopped: later changes are not reported; as in E2B, asking raises.
    open(os.path.join(workdir, "after"), "w").close()
    time.sleep(0.1)
    with pytest.raises(SandboxException, match="The watcher is already stopped"):
        h.get_new_events()


def test_a_write_is_watched_as_envds_in_place_write(sbx, workdir):
    # files.write's temporary and its rename into place are not seen: a
    # watcher gets envd's CREATE, WRITE, CHMOD of the name (E2B's
    # tests/sync/sandbox_sync/files/test_watch.py counts 3), then a WRITE
    # for an overwrite; a user's own rename is still reported.
    h = sbx.files.watch_dir(workdir)
    try:
        T = FilesystemEventType
        # The agent relays a write's events before its reply: they are there
        # as write() returns (E2B's tests ask at once).
        for _ in range(20):
            sbx.files.write(os.path.join(workdir, "n.txt"), "new")
            seen = [(e.name, e.type) for e in h.get_new_events()]
            assert seen == [("n.txt", T.CREATE), ("n.txt", T.WRITE), ("n.txt", T.CHMOD)], seen
            time.sleep(0.05)
            assert h.get_new_events() == []
            os.unlink(os.path.join(workdir, "n.txt"))
            assert _events_until(h, [("n.txt", T.REMOVE)]) == [("n.txt", T.REMOVE)]
        sbx.files.write(os.path.join(workdir, "n.txt"), "new")
        sbx.files.write(os.path.join(workdir, "n.txt"), "again")
        seen = [(e.name, e.type) for e in h.get_new_events()]
        assert seen.count(("n.txt", T.WRITE)) == 2 and all(n == "n.txt" for n, _ in seen), seen
        os.rename(os.path.join(workdir, "n.txt"), os.path.join(workdir, "m.txt"))
        seen = _events_until(h, [("n.txt", T.RENAME), ("m.txt", T.CREATE)])
        assert ("n.txt", T.RENAME) in seen and ("m.txt", T.CREATE) in seen, seen
    finally:
        h.stop()


def test_watch_dir_recursive(sbx, workdir):
    flat = sbx.files.watch_dir(workdir)
    deep = sbx.files.watch_dir(workdir, recursive=True)
    try:
        os.mkdir(os.path.join(workdir, "sub"))
        time.sleep(0.1)  # the recursive watch adds the new directory
        open(os.path.join(workdir, "sub", "inner"), "w").close()
        T = FilesystemEventType
        seen = _events_until(deep, [("sub", T.CREATE), ("sub/inner", T.CREATE)])
        assert ("sub/inner", T.CREATE) in seen
        flat_seen = _events_until(flat, [("sub", T.CREATE)])
        assert ("sub", T.CREATE) in flat_seen
        assert not any(n.startswith("sub/") for n, _ in flat_seen)
    finally:
        flat.stop()
        deep.stop()


def test_watch_dir_errors(sbx, workdir):
    with pytest.raises(NotFoundException, match="ENOENT"):
        sbx.files.watch_dir(os.path.join(workdir, "nope"))


def _rss_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AssertionError(key)


class _Generated:
    """A 1 GiB readable source that holds one chunk at a time."""

    def __init__(self, size):
        self.left = size
        self.block = bytes(range(256)) * (files_mod.CHUNK // 256)
        self.h = hashlib.sha256()

    def read(self, n):
        n = min(n, self.left, len(self.block))
        self.left -= n
        out = self.block[:n]
        self.h.update(out)
        return out


def test_1gib_bounded_memory(fresh_agent):
    """1 GiB up and down; the agent's peak RSS grows by less than 64 MiB."""
    size = 1 << 30
    pid = fresh_agent.proc.pid
    p = os.path.join(fresh_agent.workdir, "huge.bin")
    with Sandbox.connect(fresh_agent.addr, request_timeout=120) as sbx:
        sbx.files.write(os.path.join(fresh_agent.workdir, "warm"), b"x" * files_mod.CHUNK)
        base = _rss_kib(pid, "VmRSS")
        src = _Generated(size)
        sbx.files.write(p, src)
        assert os.path.getsize(p) == size
        h = hashlib.sha256()
        n = 0
        for chunk in sbx.files.read(p, format="stream"):
            h.update(chunk)
            n += len(chunk)
        assert n == size and h.digest() == src.h.digest()
        peak = _rss_kib(pid, "VmHWM")
    os.unlink(p)
    assert peak - base < 64 * 1024, f"agent RSS grew from {base} KiB to a peak of {peak} KiB"
