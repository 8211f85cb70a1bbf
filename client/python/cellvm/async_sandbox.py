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
import inspect
import threading
from typing import Dict, List, Optional, Union

from . import _async_bridge as bridge
from . import _wire
from .async_commands import AsyncCommands
from .async_files import AsyncFilesystem
from .async_git import AsyncGit
from .async_pty import AsyncPty
from .boot import BootReport
from .cloud_only import AsyncCloudOnly
from .snapshots import AsyncSnapshotPaginator, SnapshotInfo
from .exceptions import SandboxException
from .models import (Context, Execution, ExecutionError, OutputHandler, OutputMessage, Result,
                     SandboxInfo, SandboxMetrics, SandboxQuery)
from .sandbox import Sandbox, SandboxPaginator, _class_or_instance


class AsyncSandbox(AsyncCloudOnly):
    """E2B's AsyncSandbox: `sbx = await AsyncSandbox.create(...)` or
    `await AsyncSandbox.connect(sandbox_id)`, then the sync Sandbox's API with
    `await`. `AsyncSandbox(sandbox)` wraps a sync Sandbox (it takes it over:
    kill() kills it)."""

    default_template = Sandbox.default_template
    default_sandbox_timeout = Sandbox.default_sandbox_timeout

    def __init__(self, sandbox: Sandbox):
        self._sbx = sandbox
        self._killed = False
        self._files = AsyncFilesystem(sandbox)
        self._commands = AsyncCommands(sandbox)
        self._pty = AsyncPty(sandbox, self._commands)
        self._git = AsyncGit(self._commands)

    @classmethod
    async def create(cls, *args, **kwargs) -> "AsyncSandbox":
        """Sandbox.create() with the same arguments: boots a micro-VM from
        the image (or connects to $CELLVM_ADDR when it is set and no image
        is named). Cancelled, it stops whatever it booted."""
        return cls(await bridge.acquire(Sandbox.create, Sandbox.kill, *args, **kwargs))

    @_class_or_instance("_cls_connect")
    async def connect(self, timeout: Optional[int] = None, **opts) -> "AsyncSandbox":
        """`await sbx.connect()`: Sandbox.connect() of the instance (reopens a
        closed connection); `await AsyncSandbox.connect(sandbox_id)` is the
        classmethod `_cls_connect`."""
        await bridge.call(self._sbx.connect, timeout)
        return self

    @classmethod
    async def _cls_connect(cls, sandbox_id: str, timeout: Optional[int] = None, logger=None, *,
                           request_timeout: Optional[float] = None,
                           envs: Optional[Dict[str, str]] = None, **e2b_options) -> "AsyncSandbox":
        """Sandbox.connect(sandbox_id), awaited: a VM by its id (the registry
        key: this process's, another's, or a paused one, resumed), or the
        agent at an address ('unix:PATH', 'tcp:HOST:PORT', 'vsock:CID:PORT')."""
        return cls(await bridge.acquire(Sandbox._cls_connect, Sandbox._cls_kill, sandbox_id,
                                        timeout, request_timeout=request_timeout, envs=envs))

    # --- lifecycle -----------------------------------------------------------

    async def close(self) -> None:
        """Close the connection (contexts outlive it)."""
        await bridge.call(self._sbx.close)

    @_class_or_instance("_cls_kill")
    async def kill(self, request_timeout: Optional[float] = None, **opts) -> bool:
        """End the sandbox as Sandbox.kill() does (a booted VM is stopped; a
        connected one only loses this connection). True if this call ended
        it, False if kill() had ended it already (E2B: False when not found).
        `await AsyncSandbox.kill(sandbox_id)` is the classmethod `_cls_kill`."""
        if self._killed:
            return False
        self._killed = True
        return await bridge.call(self._sbx.kill)

    @classmethod
    async def _cls_kill(cls, sandbox_id: str, **opts) -> bool:
        """Sandbox.kill(sandbox_id), awaited."""
        if isinstance(sandbox_id, AsyncSandbox):
            return await sandbox_id.kill()
        return await bridge.call(Sandbox._cls_kill, sandbox_id, **opts)

    async def shutdown(self, poweroff: bool = True, timeout: float = 60.0) -> None:
        """Sandbox.shutdown(): the guest's init powers it off cleanly."""
        await bridge.call(self._sbx.shutdown, poweroff, timeout)

    async def __aenter__(self):
        return self

    async def __aexit__(self, exc_type, exc_value, traceback):
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

    @_class_or_instance("_cls_set_timeout")
    async def set_timeout(self, timeout: int, **opts) -> None:
        """The sandbox ends `timeout` s from now (Sandbox.set_timeout, cellvm.lifetime)."""
        await bridge.call(self._sbx.set_timeout, timeout)

    @classmethod
    async def _cls_set_timeout(cls, sandbox_id: str, timeout: int, **opts) -> None:
        await bridge.call(Sandbox._cls_set_timeout, sandbox_id, timeout, **opts)

    @_class_or_instance("_cls_update_network")
    async def update_network(self, network, **opts) -> None:
        """The sandbox's egress rules replaced (Sandbox.update_network)."""
        await bridge.call(self._sbx.update_network, network)

    @classmethod
    async def _cls_update_network(cls, sandbox_id: str, network, **opts) -> None:
        if isinstance(sandbox_id, AsyncSandbox):
            return await sandbox_id.update_network(network)
        await bridge.call(Sandbox._cls_update_network, sandbox_id, network, **opts)

    @_class_or_instance("_cls_get_info")
    async def get_info(self, request_timeout: Optional[float] = None, **opts) -> SandboxInfo:
        return await bridge.call(self._sbx.get_info, request_timeout)

    @classmethod
    async def _cls_get_info(cls, sandbox_id: str, **opts) -> SandboxInfo:
        if isinstance(sandbox_id, AsyncSandbox):
            return await sandbox_id.get_info()
        return await bridge.call(Sandbox._cls_get_info, sandbox_id, **opts)

    @classmethod
    def list(cls, query: Optional[SandboxQuery] = None, limit: Optional[int] = None,
             next_token: Optional[str] = None, order: Optional[str] = None,
             **opts) -> "AsyncSandboxPaginator":
        """Sandbox.list() with `await paginator.next_items()` (E2B's
        AsyncSandboxPaginator; list() itself is not awaited, as in E2B)."""
        return AsyncSandboxPaginator(query=query, limit=limit, next_token=next_token, order=order)

    def get_host(self, port: int) -> str:
        """Sandbox.get_host(port)."""
        return self._sbx.get_host(port)

    @property
    def sandbox_domain(self) -> Optional[str]:
        return None

    @property
    def traffic_access_token(self) -> Optional[str]:
        return self._sbx.traffic_access_token

    @_class_or_instance("_cls_get_metrics")
    async def get_metrics(self, start=None, end=None, **opts) -> List[SandboxMetrics]:
        """Sandbox.get_metrics(), awaited: one sample taken now."""
        return await bridge.call(self._sbx.get_metrics, start, end)

    @classmethod
    async def _cls_get_metrics(cls, sandbox_id: str, start=None, end=None, **opts) -> List[SandboxMetrics]:
        if isinstance(sandbox_id, AsyncSandbox):
            return await sandbox_id.get_metrics(start, end)
        return await bridge.call(Sandbox._cls_get_metrics, sandbox_id, start, end, **opts)

    def download_url(self, path: str, user: Optional[str] = None,
                     use_signature_expiration: Optional[int] = None) -> str:
        """Sandbox.download_url() (a URL: nothing to await)."""
        return self._sbx.download_url(path, user, use_signature_expiration)

    def upload_url(self, path: Optional[str] = None, user: Optional[str] = None,
                   use_signature_expiration: Optional[int] = None) -> str:
        """Sandbox.upload_url() (a URL: nothing to await)."""
        return self._sbx.upload_url(path, user, use_signature_expiration)

    @_class_or_instance("_cls_pause")
    async def pause(self, keep_memory: bool = True, **opts) -> bool:
        """Sandbox.pause(), awaited: the sandbox saved whole and its VMM
        stopped; `await sbx.connect()` or `AsyncSandbox.connect(id)` resumes
        it. `await AsyncSandbox.pause(sandbox_id)` is the classmethod `_cls_pause`."""
        return await bridge.call(self._sbx.pause, keep_memory)

    @classmethod
    async def _cls_pause(cls, sandbox_id: str, keep_memory: bool = True, **opts) -> bool:
        if isinstance(sandbox_id, AsyncSandbox):
            return await sandbox_id.pause(keep_memory)
        return await bridge.call(Sandbox._cls_pause, sandbox_id, keep_memory)

    beta_pause = pause

    @_class_or_instance("_cls_fork")
    async def fork(self, timeout: Optional[int] = None, count: Optional[int] = None,
                   **opts) -> List[Union["AsyncSandbox", Exception]]:
        """Sandbox.fork(), awaited: one AsyncSandbox or exception per fork.
        `await AsyncSandbox.fork(sandbox_id)` is the classmethod `_cls_fork`."""
        forks = await bridge.call(self._sbx.fork, timeout, count)
        return [AsyncSandbox(f) if isinstance(f, Sandbox) else f for f in forks]

    @classmethod
    async def _cls_fork(cls, sandbox_id: str, timeout: Optional[int] = None,
                        count: Optional[int] = None, logger=None,
                        **opts) -> List[Union["AsyncSandbox", Exception]]:
        if isinstance(sandbox_id, AsyncSandbox):
            return await sandbox_id.fork(timeout, count)
        forks = await bridge.call(Sandbox._cls_fork, sandbox_id, timeout, count)
        return [cls(f) if isinstance(f, Sandbox) else f for f in forks]

    # --- E2B's snapshots API (cellvm/snapshots.py) ------------------------------

    @_class_or_instance("_cls_create_snapshot")
    async def create_snapshot(self, name: Optional[str] = None, **opts) -> SnapshotInfo:
        """Sandbox.create_snapshot(), awaited."""
        return await bridge.call(self._sbx.create_snapshot, name)

    @classmethod
    async def _cls_create_snapshot(cls, sandbox_id: str, name: Optional[str] = None,
                                   **opts) -> SnapshotInfo:
        if isinstance(sandbox_id, AsyncSandbox):
            return await sandbox_id.create_snapshot(name)
        return await bridge.call(Sandbox._cls_create_snapshot, sandbox_id, name)

    @_class_or_instance("_cls_list_snapshots")
    def list_snapshots(self, limit: Optional[int] = None, next_token: Optional[str] = None,
                       name: Optional[str] = None, **opts) -> AsyncSnapshotPaginator:
        """Sandbox.list_snapshots() with `await next_items()` (a plain method,
        as in E2B's async SDK)."""
        return AsyncSnapshotPaginator(self.sandbox_id, limit, next_token, name)

    @classmethod
    def _cls_list_snapshots(cls, sandbox_id: Optional[str] = None, limit: Optional[int] = None,
                            next_token: Optional[str] = None, name: Optional[str] = None,
                            **opts) -> AsyncSnapshotPaginator:
        return AsyncSnapshotPaginator(sandbox_id, limit, next_token, name)

    @classmethod
    async def delete_snapshot(cls, snapshot_id: str, **opts) -> bool:
        """Sandbox.delete_snapshot(), awaited."""
        return await bridge.call(Sandbox.delete_snapshot, snapshot_id)

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
    def pty(self) -> AsyncPty:
        """E2B's sandbox.pty, async (cellvm.async_pty.AsyncPty)."""
        return self._pty

    @property
    def git(self) -> AsyncGit:
        """E2B's sandbox.git, async (cellvm.async_git.AsyncGit)."""
        return self._git

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

    @property
    def restore_report(self) -> Optional[BootReport]:
        return self._sbx.restore_report

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


# create() passes its arguments to Sandbox.create(): it takes the same ones.
AsyncSandbox.create.__func__.__signature__ = inspect.signature(Sandbox.create.__func__)


class AsyncSandboxPaginator(SandboxPaginator):
    """E2B's AsyncSandboxPaginator: `has_next`, `next_token`, and
    `await next_items()`."""

    async def next_items(self, **opts) -> List[SandboxInfo]:
        return await bridge.call(SandboxPaginator.next_items, self)
