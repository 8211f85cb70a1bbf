"""AsyncSandbox.pty: E2B's async Pty API (e2b/sandbox_async/commands/pty.py)
over cellvm's sync one (cellvm.pty): the terminal's bytes go to `on_data`
(a function or a coroutine function) on the event loop as they arrive."""

from typing import Dict, Optional, Union

from . import _async_bridge as bridge
from .async_commands import AsyncCommandHandle, AsyncCommands
from .models import OutputHandler, PtyOutput, PtySize
from .pty import Pty


class AsyncPty:
    """E2B's async sandbox.pty."""

    def __init__(self, sandbox, commands: AsyncCommands):
        self._pty = Pty(sandbox)
        self._commands = commands

    async def create(self, size: PtySize, on_data: OutputHandler[PtyOutput],
                     user: Optional[str] = None, cwd: Optional[str] = None,
                     envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = 60,
                     request_timeout: Optional[float] = None) -> AsyncCommandHandle:
        """Pty.create(), awaited: `/bin/bash -i -l` on a new terminal; an
        AsyncCommandHandle whose output goes to on_data."""
        handle = await bridge.acquire(self._pty.create, lambda h: self._pty.kill(h.pid),
                                      size, user, cwd, envs, timeout, request_timeout)
        return AsyncCommandHandle(handle, self._commands, None, None, on_pty=on_data)

    async def connect(self, pid: int, on_data: OutputHandler[PtyOutput], timeout: Optional[float] = 60,
                      request_timeout: Optional[float] = None) -> AsyncCommandHandle:
        """Follow a running terminal again, from now on (Pty.connect)."""
        handle = await bridge.call(self._pty.connect, pid, timeout, request_timeout)
        return AsyncCommandHandle(handle, self._commands, None, None, on_pty=on_data)

    async def send_stdin(self, pid: int, data: Union[bytes, str],
                         request_timeout: Optional[float] = None) -> None:
        await bridge.call(self._pty.send_stdin, pid, data, request_timeout)

    async def resize(self, pid: int, size: PtySize, request_timeout: Optional[float] = None) -> None:
        await bridge.call(self._pty.resize, pid, size, request_timeout)

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """False if there is no such terminal."""
        return await bridge.call(self._pty.kill, pid, request_timeout)
