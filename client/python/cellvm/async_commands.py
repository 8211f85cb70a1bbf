"""AsyncSandbox.commands: E2B's async Commands over cellvm's sync ones (cellvm.commands)."""

import asyncio
from typing import Dict, List, Optional, Union

from . import _async_bridge as bridge
from .commands import DEFAULT_TIMEOUT, CommandHandle, Commands
from .models import CommandResult, OutputHandler, ProcessInfo


class AsyncCommandHandle:
    """A started command (E2B's AsyncCommandHandle). Its output is followed
    from the start, in a worker thread: run()'s on_stdout/on_stderr get it
    on the event loop as it arrives, `stdout`/`stderr` accumulate it, and
    wait() returns the CommandResult (CommandExitException on a non-zero
    exit)."""

    def __init__(self, handle: CommandHandle, commands: "AsyncCommands", on_stdout, on_stderr,
                 on_pty=None):
        loop = asyncio.get_running_loop()
        self._handle = handle
        self._commands = commands
        self._done = bridge.start(handle.wait, on_pty=bridge.on_loop(loop, on_pty),
                                  on_stdout=bridge.on_loop(loop, on_stdout),
                                  on_stderr=bridge.on_loop(loop, on_stderr))
        bridge.forget(self._done)  # wait() raises it; a handle nobody waits for stays quiet

    @property
    def pid(self) -> int:
        return self._handle.pid

    @property
    def stdout(self) -> str:
        return self._handle.stdout

    @property
    def stderr(self) -> str:
        return self._handle.stderr

    @property
    def exit_code(self) -> Optional[int]:
        """None while the command runs."""
        return self._handle.exit_code

    @property
    def error(self) -> Optional[str]:
        return self._handle.error

    async def wait(self) -> CommandResult:
        """The CommandResult once the command ended; CommandExitException on
        a non-zero exit, TimeoutException past run()'s `timeout`. Cancelling
        the wait leaves the command running and followed."""
        return await asyncio.shield(self._done)

    async def kill(self) -> bool:
        """SIGKILL the command (and its process group). False if it already ended."""
        return await self._commands.kill(self.pid)

    async def send_stdin(self, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        await self._commands.send_stdin(self.pid, data, request_timeout)

    async def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        await self._commands.close_stdin(self.pid, request_timeout)

    async def disconnect(self) -> None:
        """Stop following the output; the command keeps running (background
        only) and commands.connect(pid) follows it again."""
        self._handle.disconnect()
        # The worker following the output stops within a poll interval;
        # connect() must not race it for the command's messages.
        await asyncio.wait([self._done])


class AsyncCommands:
    """E2B's async sandbox.commands."""

    def __init__(self, sandbox):
        self._cmds = Commands(sandbox)

    async def run(self, cmd: str, background: Optional[bool] = None,
                  envs: Optional[Dict[str, str]] = None, user: Optional[str] = None,
                  cwd: Optional[str] = None, on_stdout: Optional[OutputHandler[str]] = None,
                  on_stderr: Optional[OutputHandler[str]] = None, stdin: Optional[bool] = None,
                  timeout: Optional[float] = DEFAULT_TIMEOUT,
                  request_timeout: Optional[float] = None) -> Union[CommandResult, AsyncCommandHandle]:
        """Commands.run(), awaited; on_stdout/on_stderr (functions or
        coroutine functions) run on the event loop. Foreground: the
        CommandResult (CommandExitException on a non-zero exit); a cancelled
        await kills the command. background=True: an AsyncCommandHandle."""
        handle = await bridge.acquire(self._cmds._start, lambda h: self._cmds.kill(h.pid), cmd,
                                      background, envs, user, cwd, stdin, timeout, request_timeout)
        command = AsyncCommandHandle(handle, self, on_stdout, on_stderr)
        if background:
            return command
        return await bridge.wait_or_cancel(command._done, lambda: self._cmds.kill(handle.pid))

    async def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        return await bridge.call(self._cmds.list, request_timeout)

    async def connect(self, pid: int, timeout: Optional[float] = DEFAULT_TIMEOUT,
                      request_timeout: Optional[float] = None,
                      on_stdout: Optional[OutputHandler[str]] = None,
                      on_stderr: Optional[OutputHandler[str]] = None) -> AsyncCommandHandle:
        """Commands.connect(), awaited: an AsyncCommandHandle following
        command `pid` again (see Commands.connect for what cellvm can follow)."""
        handle = await bridge.call(self._cmds.connect, pid, timeout, request_timeout)
        return AsyncCommandHandle(handle, self, on_stdout, on_stderr)

    async def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """SIGKILL command `pid`; False if there is no such command."""
        return await bridge.call(self._cmds.kill, pid, request_timeout)

    async def send_stdin(self, pid: int, data: Union[str, bytes],
                         request_timeout: Optional[float] = None) -> None:
        await bridge.call(self._cmds.send_stdin, pid, data, request_timeout)

    async def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        await bridge.call(self._cmds.close_stdin, pid, request_timeout)
