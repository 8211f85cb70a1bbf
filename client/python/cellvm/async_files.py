"""AsyncSandbox.files: E2B's async Filesystem over cellvm's sync one (cellvm.files)."""

import asyncio
import threading
import time
from typing import IO, Dict, List, Optional, Union

from . import _async_bridge as bridge
from .exceptions import format_long_request_timeout_error
from .file_stream import AsyncFileStreamReader
from .files import Filesystem, WatchHandle
from .models import EntryInfo, FilesystemEvent, OutputHandler, WriteEntry, WriteInfo

_WATCH_POLL_S = 0.05
"""How often a watch looks for new events (the sync WatchHandle polls)."""


class AsyncWatchHandle:
    """A running watch_dir() (E2B's AsyncWatchHandle): on_event gets each
    event on the event loop; stop() ends the watch. The watch also ends
    after `timeout` seconds or on an error, and then on_exit gets the
    exception (as in E2B)."""

    def __init__(self, handle: WatchHandle, on_event, on_exit, timeout):
        loop = asyncio.get_running_loop()
        self._handle = handle
        self._on_event = bridge.on_loop(loop, on_event)
        self._on_exit = bridge.on_loop(loop, on_exit)
        self._deadline = time.monotonic() + timeout if timeout else None
        self._stop = threading.Event()
        self._pump = bridge.start(self._follow)
        bridge.forget(self._pump)

    def _follow(self):
        """In a worker: hands events to on_event until stop() or the end."""
        try:
            while not self._stop.is_set():
                for event in self._handle.get_new_events():
                    self._on_event(event)
                if self._handle._stopped:
                    return  # the agent ended the watch
                if self._deadline is not None and time.monotonic() > self._deadline:
                    raise format_long_request_timeout_error()
                self._stop.wait(_WATCH_POLL_S)
        except Exception as e:  # an error, a timeout, or on_event raised
            self._handle.stop()
            if self._on_exit is not None and not self._stop.is_set():
                self._on_exit(e)

    async def stop(self) -> None:
        """Stop watching; no event is delivered after this returns."""
        self._stop.set()
        await bridge.call(self._handle.stop)
        try:
            await self._pump
        except Exception:
            pass  # on_exit had it


class AsyncFilesystem:
    """E2B's async sandbox.files: the methods of cellvm.files.Filesystem,
    awaited, and watch_dir with E2B's async callbacks."""

    def __init__(self, sandbox):
        self._fs = Filesystem(sandbox)

    async def read(self, path: str, format: str = "text", user: Optional[str] = None,
                   request_timeout: Optional[float] = None, gzip: bool = False,
                   stream_idle_timeout: Optional[float] = None) -> Union[str, bytearray, AsyncFileStreamReader]:
        """The content of `path`: str (format="text"), bytearray ("bytes") or
        an async iterator of byte chunks ("stream", bounded memory; a chunk
        later than `stream_idle_timeout` s, 0 = no limit, raises TimeoutException)."""
        content = await bridge.call(self._fs.read, path, format, user, request_timeout,
                                    stream_idle_timeout=stream_idle_timeout)
        return AsyncFileStreamReader(content) if format == "stream" else content

    async def write(self, path: str, data: Union[str, bytes, IO], user: Optional[str] = None,
                    request_timeout: Optional[float] = None, gzip: bool = False,
                    use_octet_stream: Optional[bool] = None,
                    metadata: Optional[Dict[str, str]] = None) -> WriteInfo:
        """Write `data` (str, bytes or a readable file object, read in a
        worker thread) to `path` atomically."""
        return await bridge.call(self._fs.write, path, data, user, request_timeout, metadata=metadata)

    async def write_files(self, files: List[WriteEntry], user: Optional[str] = None,
                          request_timeout: Optional[float] = None, gzip: bool = False,
                          use_octet_stream: Optional[bool] = None,
                          metadata: Optional[Dict[str, str]] = None) -> List[WriteInfo]:
        return await bridge.call(self._fs.write_files, files, user, request_timeout, metadata=metadata)

    async def list(self, path: str, depth: Optional[int] = 1, user: Optional[str] = None,
                   request_timeout: Optional[float] = None) -> List[EntryInfo]:
        return await bridge.call(self._fs.list, path, depth, user, request_timeout)

    async def exists(self, path: str, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> bool:
        return await bridge.call(self._fs.exists, path, user, request_timeout)

    async def get_info(self, path: str, user: Optional[str] = None,
                       request_timeout: Optional[float] = None) -> EntryInfo:
        return await bridge.call(self._fs.get_info, path, user, request_timeout)

    async def remove(self, path: str, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> None:
        await bridge.call(self._fs.remove, path, user, request_timeout)

    async def rename(self, old_path: str, new_path: str, user: Optional[str] = None,
                     request_timeout: Optional[float] = None) -> EntryInfo:
        return await bridge.call(self._fs.rename, old_path, new_path, user, request_timeout)

    async def make_dir(self, path: str, user: Optional[str] = None,
                       request_timeout: Optional[float] = None) -> bool:
        return await bridge.call(self._fs.make_dir, path, user, request_timeout)

    async def watch_dir(self, path: str, on_event: OutputHandler[FilesystemEvent],
                        on_exit: Optional[OutputHandler[Exception]] = None,
                        user: Optional[str] = None, request_timeout: Optional[float] = None,
                        timeout: Optional[float] = 60, recursive: bool = False,
                        include_entry: bool = False, allow_network_mounts: bool = False) -> AsyncWatchHandle:
        """Watch `path`: on_event(FilesystemEvent) for each create, write,
        remove, rename and chmod, until stop() or `timeout` seconds (0 =
        none; then on_exit gets a TimeoutException)."""
        handle = await bridge.acquire(self._fs.watch_dir, WatchHandle.stop, path, user,
                                      request_timeout, recursive, include_entry, allow_network_mounts)
        return AsyncWatchHandle(handle, on_event, on_exit, timeout)
