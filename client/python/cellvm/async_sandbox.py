"""AsyncSandbox: e2b_code_interpreter's AsyncSandbox over cellvm's sync Sandbox.

Every method awaits the sync call run in a worker thread (_async_bridge):
the sync Sandbox is thread-safe, so cells in different contexts, file
transfers and commands of one AsyncSandbox run at the same time over its one
connection. Callbacks run on the event loop, one at a time in output order;
a callback may be a coroutine function (E2B awaits what a callback returns).
Cancelling the task that awaits run_code() (asyncio.wait_for, a TaskGroup,
...) cancels the execution in the sandbox as Ctrl-C does in the sync SDK.
"""

import asyncio
import threading
from typing import Dict, List, Optional, Union

from . import _async_bridge as bridge
from . import _wire
from .async_commands import AsyncCommands
from .async_files import AsyncFilesystem
from .boot import BootReport
from .exceptions import SandboxException
from .models import (Context, Execution, ExecutionError, OutputHandler, OutputMessage, Result,
                     SandboxInfo)
from .sandbox import Sandbox


class AsyncSandbox:
    """E2B's AsyncSandbox: `sbx = await AsyncSandbox.create(...)` or
    `await AsyncSandbox.connect(addr)`, then the sync Sandbox's API with
    `await`. `AsyncSandbox(sandbox)` wraps a sync Sandbox (it takes it over:
    kill() kills it)."""

    default_template = None

    def __init__(self, sandbox: Sandbox):
        self._sbx = sandbox
        self._killed = False
        self._files = AsyncFilesystem(sandbox)
        self._commands = AsyncCommands(sandbox)

    @classmethod
    async def create(cls, *args, **kwargs) -> "AsyncSandbox":
        """Sandbox.create() with the same arguments: boots a micro-VM from
        the image (or connects to $CELLVM_ADDR when it is set and no image
        is named). Cancelled, it stops whatever it booted."""
        return cls(await bridge.acquire(Sandbox.create, Sandbox.kill, *args, **kwargs))

    @classmethod
    async def connect(cls, addr: str, request_timeout: Optional[float] = None,
                      envs: Optional[Dict[str, str]] = None) -> "AsyncSandbox":
        """Connect to the agent at `addr` ('unix:PATH', 'tcp:HOST:PORT' or 'vsock:CID:PORT')."""
        return cls(await bridge.acquire(Sandbox.connect, Sandbox.kill, addr,
                                        request_timeout=request_timeout, envs=envs))

    # --- lifecycle -----------------------------------------------------------

    async def close(self) -> None:
        """Close the connection (contexts outlive it)."""
        await bridge.call(self._sbx.close)

    async def kill(self, request_timeout: Optional[float] = None) -> bool:
        """End the sandbox as Sandbox.kill() does (a booted VM is stopped; a
        connected one only loses this connection). True if this call ended
        it, False if kill() had ended it already (E2B: False when not found)."""
        if self._killed:
            return False
        self._killed = True
        await bridge.call(self._sbx.kill)
        return True

    async def shutdown(self, poweroff: bool = True, timeout: float = 60.0) -> None:
        """Sandbox.shutdown(): the guest's init powers it off cleanly."""
        await bridge.call(self._sbx.shutdown, poweroff, timeout)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.kill()

    async def is_running(self, request_timeout: Optional[float] = None) -> bool:
        """True while the agent answers a ping."""
        def answers():
            try:
                self._sbx.ping(request_timeout=request_timeout)
                return True
            except (SandboxException, _wire.ConnectionClosed):
                return False
        return await bridge.call(answers)

    async def set_timeout(self, timeout: int, request_timeout: Optional[float] = None) -> None:
        """Accepted and ignored: a cellvm sandbox lives until kill()."""
        self._sbx.set_timeout(timeout)

    async def get_info(self, request_timeout: Optional[float] = None) -> SandboxInfo:
        return self._sbx.get_info(request_timeout)

    # --- introspection -------------------------------------------------------

    @property
    def sandbox_id(self) -> str:
        return self._sbx.sandbox_id

    @property
    def files(self) -> AsyncFilesystem:
        """E2B's sandbox.files, async (cellvm.async_files.AsyncFilesystem)."""
        return self._files

    @property
    def commands(self) -> AsyncCommands:
        """E2B's sandbox.commands, async (cellvm.async_commands.AsyncCommands)."""
        return self._commands

    @property
    def vmm_pid(self) -> Optional[int]:
        return self._sbx.vmm_pid

    @property
    def vm(self):
        return self._sbx.vm

    @property
    def hello(self) -> dict:
        return self._sbx.hello

    @property
    def boot_report(self) -> BootReport:
        return self._sbx.boot_report

    async def ping(self, payload=None, request_timeout: Optional[float] = None) -> dict:
        return await bridge.call(self._sbx.ping, payload, request_timeout)

    async def set_time(self, realtime_ns: Optional[int] = None,
                       request_timeout: Optional[float] = None) -> None:
        await bridge.call(self._sbx.set_time, realtime_ns, request_timeout)

    async def add_entropy(self, seed: Optional[bytes] = None,
                          request_timeout: Optional[float] = None) -> int:
        return await bridge.call(self._sbx.add_entropy, seed, request_timeout)

    # --- execution -----------------------------------------------------------

    async def run_code(
        self,
        code: str,
        language: Optional[str] = None,
        context: Optional[Union[Context, str]] = None,
        on_stdout: Optional[OutputHandler[OutputMessage]] = None,
        on_stderr: Optional[OutputHandler[OutputMessage]] = None,
        on_result: Optional[OutputHandler[Result]] = None,
        on_error: Optional[OutputHandler[ExecutionError]] = None,
        envs: Optional[Dict[str, str]] = None,
        timeout: Optional[float] = None,
        request_timeout: Optional[float] = None,
    ) -> Execution:
        """Sandbox.run_code(), awaited. Callbacks (functions or coroutine
        functions) run on the event loop as output arrives. If the awaiting
        task is cancelled, the execution is cancelled in the sandbox (the
        context survives) before CancelledError propagates."""
        loop = asyncio.get_running_loop()
        abort = threading.Event()
        fut = bridge.start(self._sbx._run_code, code, language, context,
                           bridge.on_loop(loop, on_stdout), bridge.on_loop(loop, on_stderr),
                           bridge.on_loop(loop, on_result), bridge.on_loop(loop, on_error),
                           envs, timeout, request_timeout, abort=abort)
        return await bridge.wait_or_cancel(fut, abort.set)

    async def interrupt(self, context: Optional[Union[Context, str]] = None,
                        request_timeout: Optional[float] = None) -> None:
        """KeyboardInterrupt in the cell running in `context` (default context if None)."""
        await bridge.call(self._sbx.interrupt, context, request_timeout)

    # --- contexts ------------------------------------------------------------

    async def create_code_context(self, cwd: Optional[str] = None, language: Optional[str] = None,
                                  request_timeout: Optional[float] = None) -> Context:
        """A new, empty namespace in its own process."""
        return await bridge.call(self._sbx.create_code_context, cwd, language, request_timeout)

    async def list_code_contexts(self, request_timeout: Optional[float] = None) -> List[Context]:
        return await bridge.call(self._sbx.list_code_contexts, request_timeout)

    async def restart_code_context(self, context: Union[Context, str],
                                   request_timeout: Optional[float] = None) -> None:
        """Fresh process and namespace under the same id."""
        await bridge.call(self._sbx.restart_code_context, context, request_timeout)

    async def remove_code_context(self, context: Union[Context, str],
                                  request_timeout: Optional[float] = None) -> None:
        await bridge.call(self._sbx.remove_code_context, context, request_timeout)

    delete_code_context = remove_code_context
