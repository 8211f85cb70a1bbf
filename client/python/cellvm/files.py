"""sandbox.files: E2B's Filesystem API over the files service (docs/PROTOCOL.md section 9).

Uploads go as FILE_WRITE then FILE_DATA chunks of CHUNK bytes; downloads come
back as FILE_CHUNK messages. Neither side holds more than a few chunks at a
time, so big files move with bounded memory (except read(format="bytes"/
"text"), which returns the whole content by definition).
"""

import io
import posixpath
import re
import struct
import time
from typing import IO, Dict, List, Optional, Union

from . import _wire
from .exceptions import (
    FileNotFoundException,
    InvalidArgumentException,
    SandboxException,
    TemplateException,
    format_request_timeout_error,
    from_agent_error,
)
from .file_stream import FileStreamReader
from .models import EntryInfo, FileType, FilesystemEvent, FilesystemEventType, WriteEntry, WriteInfo

FILE_WRITE = 0x0100
FILE_DATA = 0x0101
FILE_READ = 0x0102
FILE_LIST = 0x0103
FILE_STAT = 0x0104
FILE_REMOVE = 0x0105
FILE_RENAME = 0x0106
FILE_MKDIR = 0x0107
FILE_WATCH = 0x0108
FILE_CHUNK = 0x8100
FILE_EVENT = 0x8101
WATCH_STARTED = 0x8102

CHUNK = 1 << 20
"""Bytes of file data per FILE_DATA message."""

_DATA_PREFIX = b"\xa1\x64data"  # CBOR: map(1), text(4) "data"


def _bytes_head(n):
    """CBOR byte-string head for n bytes."""
    if n < 24:
        return bytes([0x40 | n])
    if n < 0x100:
        return bytes([0x58, n])
    if n < 0x10000:
        return b"\x59" + struct.pack(">H", n)
    return b"\x5a" + struct.pack(">I", n)


def _raise(msg):
    raise from_agent_error(_wire.AgentError(msg.get("code", "internal"), msg.get("message", "")),
                           FileNotFoundException)


class WatchHandle:
    """A running watch_dir(): events arrive in the background; get_new_events()
    returns those since the last call, stop() ends the watch (E2B's WatchHandle)."""

    def __init__(self, files, req, entry_of=None):
        self._files = files
        self._req = req
        self._entry_of = entry_of  # watch_dir(include_entry=True): name -> EntryInfo or None
        self._stopped = False  # the watch ended: stop(), an error, or the directory went away
        self._closed = False  # stop() was called
        self._error = None

    def get_new_events(self, request_timeout: Optional[float] = None) -> List[FilesystemEvent]:
        """The events since the last call. After stop(), SandboxException as in E2B.
        `request_timeout` bounds the get_info() of include_entry."""
        if self._closed:
            raise SandboxException("The watcher is already stopped")
        if self._error is not None:
            raise self._error
        events = []
        while True:
            try:
                item = self._req.poll()
            except (_wire.ConnectionClosed, _wire.ProtocolError, _wire.AgentError) as e:
                self._error = self._files._sbx._connection_error(e, FILE_WATCH)
                raise self._error
            if item is None:
                return events
            mtype, msg = item
            if mtype == FILE_EVENT:
                try:
                    etype = FilesystemEventType(msg.get("type"))
                except ValueError:
                    continue
                name = msg.get("name", "")
                entry = self._entry_of(name, request_timeout) if self._entry_of else None
                events.append(FilesystemEvent(name=name, type=etype, entry=entry))
            elif mtype == _wire.ERROR and msg.get("code") != "cancelled":
                self._stopped = True
                self._error = from_agent_error(_wire.AgentError(msg.get("code", "internal"), msg.get("message", "")),
                                               FileNotFoundException)
                if not events:
                    raise self._error
                return events
            elif mtype in _wire.TERMINAL:
                self._stopped = True
                return events

    def stop(self, request_timeout: Optional[float] = None) -> None:
        """Stop watching; get_new_events() raises SandboxException afterwards.
        (Nothing to wait for: `request_timeout` is accepted as E2B's.)"""
        self._closed = True
        if self._stopped:
            return
        self._stopped = True
        try:
            self._req.cancel()
        except (_wire.AgentError, _wire.ConnectionClosed, TimeoutError):
            pass  # already over


# E2B's (e2b/sandbox/filesystem/filesystem.py): keys are HTTP header tokens,
# values printable US-ASCII, checked before anything is sent.
_METADATA_KEY = re.compile(r"\A[A-Za-z0-9!#$%&'*+\-.^_`|~]+\Z")
_METADATA_VALUE = re.compile(r"\A[\x20-\x7e]*\Z")


def _refuse_metadata(metadata):
    for key, value in (metadata or {}).items():  # E2B validates first
        if not _METADATA_KEY.match(key):
            raise InvalidArgumentException(
                f"Invalid metadata key {key!r}: keys must be non-empty and use only "
                "HTTP token characters (letters, digits and !#$%&'*+-.^_`|~).")
        if not _METADATA_VALUE.match(value):
            raise InvalidArgumentException(
                f"Invalid metadata value for key {key!r}: values must be printable US-ASCII.")
    if metadata:
        # E2B's exception for an envd without file metadata (sandbox_sync/filesystem/filesystem.py)
        raise TemplateException("File metadata is not supported by cellvm: the guest's file systems "
                                "keep no user.e2b.* extended attributes")


class Filesystem:
    """E2B's sandbox.files. Paths are absolute or relative to the user's home
    (the agent's --workdir in dev mode); `user` picks whose permissions apply
    ("user" by default, "root" when asked)."""

    def __init__(self, sandbox):
        self._sbx = sandbox

    # --- plumbing ----------------------------------------------------------

    def _call(self, mtype, body, user, request_timeout):
        if user is not None:
            body["user"] = user
        return self._sbx._call(mtype, body, request_timeout, FileNotFoundException, rpc=True)

    def _send_chunk(self, conn, req_id, data, eof):
        body_head = b"\xa2\x64data" + _bytes_head(len(data))
        tail = b"\x63eof" + (b"\xf5" if eof else b"\xf4")
        size = len(body_head) + len(data) + len(tail)
        hdr = _wire.HEADER.pack(size, FILE_DATA, 0, req_id)
        conn.send(hdr + body_head, data, tail)

    def _entry_reader(self, path, user):
        """name (relative to the watched `path`) -> its EntryInfo, None if it is gone."""
        def entry_of(name, request_timeout):
            try:
                return self.get_info(posixpath.join(path, name), user=user, request_timeout=request_timeout)
            except FileNotFoundException:
                return None
        return entry_of

    # --- E2B API -----------------------------------------------------------

    def read(self, path: str, format: str = "text", user: Optional[str] = None,
             request_timeout: Optional[float] = None, gzip: bool = False,
             stream_idle_timeout: Optional[float] = None) -> Union[str, bytearray, FileStreamReader]:
        """The content of `path`: str (format="text"), bytearray ("bytes", as
        E2B returns it) or an iterator of byte chunks ("stream", bounded
        memory). `gzip` (E2B's transfer compression) is accepted and has no
        effect: the agent's channel is local. `stream_idle_timeout` (E2B's
        async SDK's): a stream whose next chunk takes longer raises
        TimeoutException (0: no limit; default request_timeout)."""
        if format not in ("text", "bytes", "stream"):
            raise InvalidArgumentException(f"format must be 'text', 'bytes' or 'stream', not {format!r}")
        body = {"path": path}
        if user is not None:
            body["user"] = user
        timeout = request_timeout or self._sbx._request_timeout
        if format == "stream":
            if stream_idle_timeout is not None:
                timeout = stream_idle_timeout or None
            return self._read_stream(body, timeout)
        data = bytearray()
        for chunk in self._read_chunks(self._sbx._conn, body, timeout, own_conn=False):
            data += chunk
        # As E2B's SDK (httpx's text): bytes that are not UTF-8 read as U+FFFD.
        return data if format == "bytes" else data.decode("utf-8", errors="replace")

    def _read_stream(self, body, timeout):
        # A connection of its own, read by a thread of its own that stops
        # while the caller is 8 chunks behind (back pressure to the agent).
        self._sbx._preflight(FILE_READ)  # paused, ended: as any request
        conn = self._sbx._open_extra_connection()
        if isinstance(conn, _wire.Connection):
            conn.start_reader()  # socket reads overlap the caller's writes
        gen = self._read_chunks(conn, body, timeout, own_conn=True)
        first = next(gen, None)  # surface open errors (not found, ...) at call time

        def chunks():
            if first is not None:
                yield first
            yield from gen
        return FileStreamReader(chunks(), source=gen)

    def _read_chunks(self, conn, body, timeout, own_conn):
        """The chunks of FILE_READ `body`: over the sandbox's own connection
        (its request checks: paused, ended, ...), or `conn`, the one
        _read_stream opened (own_conn: closed at the end)."""
        try:
            try:
                if own_conn:
                    req = conn.request(FILE_READ, body)
                else:
                    req = self._sbx._request(FILE_READ, body)
                for mtype, msg in req.messages(timeout=timeout):
                    if mtype == FILE_CHUNK:
                        yield msg.get("data", b"")
                    elif mtype == _wire.OK:
                        return
                    elif mtype == _wire.ERROR:
                        _raise(msg)
            except TimeoutError:
                raise format_request_timeout_error() from None
            except (_wire.ConnectionClosed, _wire.ProtocolError) as e:
                raise self._sbx._connection_error(e, FILE_READ) from None
        finally:
            if own_conn:
                conn.close()

    def write(self, path: Union[str, List[WriteEntry]], data: Union[str, bytes, IO, None] = None,
              user: Optional[str] = None, request_timeout: Optional[float] = None,
              gzip: bool = False, use_octet_stream: Optional[bool] = None,
              metadata: Optional[Dict[str, str]] = None) -> Union[WriteInfo, List[WriteInfo]]:
        """Write `data` (str, bytes or a readable file object) to `path`
        atomically: readers see the old content or the new, never part of it.
        Missing parent directories are created. Returns WriteInfo(name, type,
        path). `gzip` and `use_octet_stream` choose E2B's HTTP encoding of the
        upload: accepted, without effect here. E2B 1.x's form write([WriteEntry,
        ...]) writes them all as write_files() does and returns their WriteInfos.
        `metadata` (E2B's user.e2b.* xattrs) raises TemplateException, as
        E2B's SDK does for an envd without them: the guest keeps no xattrs."""
        _refuse_metadata(metadata)
        if isinstance(path, (list, tuple)):
            if data is not None and user is None and isinstance(data, str):
                user = data  # 1.x: write(files, user, request_timeout)
            return self.write_files(list(path), user=user, request_timeout=request_timeout)
        if isinstance(data, str):
            data = data.encode("utf-8")
        if isinstance(data, (bytes, bytearray, memoryview)):
            src = io.BytesIO(data)
        elif hasattr(data, "read"):
            src = data
        else:
            # E2B's wording (sandbox_sync/filesystem/filesystem.py write_files)
            raise InvalidArgumentException(f"Unsupported data type for file {path}")
        body = {"path": path}
        if user is not None:
            body["user"] = user
        conn = self._sbx._conn
        req = self._sbx._request(FILE_WRITE, body)
        try:
            pending = src.read(CHUNK)
            if isinstance(pending, str):
                pending = pending.encode("utf-8")
            while True:
                # An early ERROR (permission denied, disk full): stop sending.
                if req.has_message():
                    break
                nxt = src.read(CHUNK) if pending else b""
                if isinstance(nxt, str):
                    nxt = nxt.encode("utf-8")
                self._send_chunk(conn, req.id, pending, eof=not nxt)
                if not nxt:
                    break
                pending = nxt
        except OSError as e:
            conn._fail(_wire.ConnectionClosed(f"send failed: {e}"))
        except BaseException:
            # Reading the source failed or Ctrl-C: the agent drops the temporary file.
            try:
                req.cancel()
            except (_wire.AgentError, _wire.ConnectionClosed):
                pass
            raise
        reply = self._sbx._wait(req, request_timeout, FileNotFoundException)
        return WriteInfo(name=reply.get("name", ""), type=FileType.FILE, path=reply.get("path", ""))

    def write_files(self, files: List[WriteEntry], user: Optional[str] = None,
                    request_timeout: Optional[float] = None, gzip: bool = False,
                    use_octet_stream: Optional[bool] = None,
                    metadata: Optional[Dict[str, str]] = None) -> List[WriteInfo]:
        """E2B's batch form: a list of WriteEntry, {"path": ..., "data": ...}
        (objects with .path and .data, E2B 1.x's dataclass, too). Each file
        is written atomically, in order; [] for an empty list. `metadata`: as write()."""
        _refuse_metadata(metadata)
        infos = []
        for f in files:
            if isinstance(f, dict):
                path, data = f.get("path"), f.get("data")
            else:
                path, data = getattr(f, "path", None), getattr(f, "data", None)
            if not isinstance(path, str) or data is None:
                raise InvalidArgumentException(
                    f"each file must be a WriteEntry with 'path' and 'data', not {f!r}")
            infos.append(self.write(path, data, user=user, request_timeout=request_timeout))
        return infos

    def list(self, path: str, depth: Optional[int] = 1, user: Optional[str] = None,
             request_timeout: Optional[float] = None) -> List[EntryInfo]:
        """Entries of directory `path`, `depth` levels down (1 = direct children)."""
        if depth is not None and depth < 1:
            raise InvalidArgumentException("depth should be at least 1")  # E2B's wording
        body = {"path": path, "depth": depth or 1}
        reply = self._call(FILE_LIST, body, user, request_timeout)
        # As E2B's list(): entries of no FileType (sockets, FIFOs, devices,
        # dangling symlinks) are left out.
        entries = (EntryInfo.from_wire(e) for e in reply.get("entries", []))
        return [e for e in entries if e.type is not None]

    def exists(self, path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> bool:
        from .exceptions import NotFoundException
        try:
            self.get_info(path, user=user, request_timeout=request_timeout)
            return True
        except NotFoundException:
            return False

    def get_info(self, path: str, user: Optional[str] = None,
                 request_timeout: Optional[float] = None) -> EntryInfo:
        reply = self._call(FILE_STAT, {"path": path}, user, request_timeout)
        return EntryInfo.from_wire(reply["entry"])

    def remove(self, path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> None:
        """Remove a file, or a directory with everything in it. A path that
        does not exist is no error: E2B's envd removes with Go's os.RemoveAll
        (services/filesystem/remove.go; E2B's test_remove_non_existing_file)."""
        try:
            self._call(FILE_REMOVE, {"path": path}, user, request_timeout)
        except FileNotFoundException:
            pass

    def rename(self, old_path: str, new_path: str, user: Optional[str] = None,
               request_timeout: Optional[float] = None) -> EntryInfo:
        reply = self._call(FILE_RENAME, {"old_path": old_path, "new_path": new_path}, user,
                           request_timeout)
        return EntryInfo.from_wire(reply["entry"])

    def make_dir(self, path: str, user: Optional[str] = None,
                 request_timeout: Optional[float] = None) -> bool:
        """Create `path` and missing parents; False if it already existed."""
        return bool(self._call(FILE_MKDIR, {"path": path}, user, request_timeout).get("created"))

    def watch_dir(self, path: str, user: Optional[str] = None,
                  request_timeout: Optional[float] = None, recursive: bool = False,
                  include_entry: bool = False, allow_network_mounts: bool = False) -> WatchHandle:
        """Watch `path` for create, write, remove, rename and chmod events.
        `include_entry`: each event's `entry` is the EntryInfo of what it
        names, read when get_new_events() takes it (None once it is gone: a
        remove, a rename away). `allow_network_mounts` (E2B: watch NFS, FUSE,
        ... mounts too) changes nothing: a cellvm guest mounts none."""
        body = {"path": path, "recursive": bool(recursive)}
        if user is not None:
            body["user"] = user
        req = self._sbx._request(FILE_WATCH, body)
        deadline = time.monotonic() + (request_timeout or self._sbx._request_timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise format_request_timeout_error()
            try:
                mtype, msg = next(req.messages(timeout=left))
            except TimeoutError:
                raise format_request_timeout_error() from None
            except (_wire.ConnectionClosed, _wire.ProtocolError) as e:
                raise self._sbx._connection_error(e, FILE_WATCH) from None
            if mtype == WATCH_STARTED:
                return WatchHandle(self, req, self._entry_reader(path, user) if include_entry else None)
            if mtype == _wire.ERROR:
                _raise(msg)
