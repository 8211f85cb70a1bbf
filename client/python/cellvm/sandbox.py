"""Sandbox: the E2B code-interpreter API over the cellvm wire protocol.

Mirrors e2b_code_interpreter.Sandbox (sync): run_code with streaming
callbacks, code contexts, timeouts. One Sandbox holds one connection to the
agent; several threads may call it at once (requests are multiplexed).
"""

import datetime as _dt
import os
import time
from typing import Dict, List, Optional, Union

from . import _wire
from .boot import BootReport
from .exceptions import (
    InvalidArgumentException,
    SandboxException,
    format_request_timeout_error,
    from_agent_error,
)
from .models import (Context, Execution, ExecutionError, OutputHandler, OutputMessage, Result,
                     SandboxInfo)

DEFAULT_TIMEOUT = 300.0
"""Seconds an execution may run when run_code gets no timeout (E2B's default)."""
DEFAULT_REQUEST_TIMEOUT = 30.0
"""Seconds to wait for a reply to a non-execution request (E2B's default)."""
ADDR_ENV = "CELLVM_ADDR"
# How often a waiting run_code wakes up, so Ctrl-C and the client-side guard
# are noticed even when no message arrives.
_POLL_S = 0.2
# After a cancel, how long to wait for the request's terminal message.
_DRAIN_S = 5.0


def _context_id(context: Union[Context, str, None]) -> Optional[str]:
    if context is None:
        return None
    if isinstance(context, Context):
        return context.id
    if isinstance(context, str):
        return context
    raise InvalidArgumentException(f"context must be a Context or a context id, not {type(context).__name__}")


def _open_connection(addr: str, timeout: float) -> "_wire.Connection":
    """Connect and handshake, both bounded by `timeout` seconds."""
    try:
        _wire.parse_address(addr)
    except ValueError as e:
        raise InvalidArgumentException(str(e)) from None
    try:
        return _wire.Connection.connect(addr, timeout=timeout)
    except _wire.AgentError as e:
        raise from_agent_error(e) from None
    except TimeoutError:
        raise format_request_timeout_error() from None
    except (_wire.ConnectionClosed, _wire.ProtocolError) as e:
        raise SandboxException(f"handshake with the agent at {addr} failed: {e}") from None
    except OSError as e:
        raise SandboxException(f"cannot connect to the agent at {addr}: {e}") from None


class ExecutionAborted(SandboxException):
    """_run_code()'s `abort` event was set: the execution was cancelled in the sandbox."""


class _Messages:
    """A request's messages one at a time; TimeoutError after _POLL_S without one.

    Keeps one generator while messages flow (cheap per message) and starts a
    new one after a timeout, which ends the old generator."""

    def __init__(self, req):
        self._req = req
        self._gen = None

    def next(self):
        if self._gen is None:
            self._gen = self._req.messages(timeout=_POLL_S)
        try:
            return next(self._gen)
        except TimeoutError:
            self._gen = None
            raise
        except StopIteration:
            self._gen = None
            raise SandboxException("request ended without a terminal message") from None
        except (_wire.ConnectionClosed, _wire.ProtocolError, _wire.AgentError) as e:
            self._gen = None
            raise SandboxException(f"connection to the agent failed: {e}") from None


class _SharedConnection:
    """The sandbox's own connection lent where a second one is wanted (a
    streamed download) on a single-stream channel: QEMU's serial socket serves
    one client at a time, so a second connection would wait until the first
    closed. A thread waiting for another request of the sandbox may read
    the download's chunks and hold them for it meanwhile."""

    def __init__(self, conn):
        self._conn = conn

    def request(self, mtype, body=None):
        return self._conn.request(mtype, body)

    def close(self):
        pass  # the sandbox owns the connection


class Sandbox:
    """A connection to one cellvm agent (one micro-VM, or a local dev agent).

    `Sandbox.create(image="build/image")` boots a micro-VM and connects to it
    (cellvm.launch); kill() then stops the VM.
    `Sandbox.connect("unix:/path/agent.sock")` (or `tcp:127.0.0.1:PORT`)
    connects to an agent that is already running. `Sandbox()` connects to
    $CELLVM_ADDR when it is set and otherwise boots a micro-VM like
    `Sandbox.create()`, so E2B programs written as `with Sandbox() as sbx:`
    run unchanged. E2B's creation options
    (template, timeout, metadata, api_key, ...) have no meaning for an agent
    that is already running and are accepted and ignored; `envs` is applied to
    every execution.
    """

    default_template = None

    def __init__(
        self,
        template: Optional[str] = None,
        timeout: Optional[int] = None,
        metadata: Optional[Dict[str, str]] = None,
        envs: Optional[Dict[str, str]] = None,
        *,
        addr: Optional[str] = None,
        request_timeout: Optional[float] = None,
        **e2b_options,
    ):
        addr = addr or os.environ.get(ADDR_ENV)
        if not addr:
            # E2B's Sandbox() starts a new sandbox: boot a micro-VM from the
            # image ($CELLVM_IMAGE, else build/image), as Sandbox.create() does.
            booted = type(self)._boot(template=template, metadata=metadata, envs=envs,
                                      request_timeout=request_timeout)
            self.__dict__.update(booted.__dict__)
            return
        self._addr = addr
        self._envs = {str(k): str(v) for k, v in (envs or {}).items()}
        self._request_timeout = request_timeout or DEFAULT_REQUEST_TIMEOUT
        self._conn = _open_connection(addr, self._request_timeout)
        self._closed = False
        self._vm = None
        self._started_at = _dt.datetime.now(_dt.timezone.utc)
        self._metadata = dict(metadata or {})

    @classmethod
    def connect(cls, addr: str, request_timeout: Optional[float] = None,
                envs: Optional[Dict[str, str]] = None) -> "Sandbox":
        """Connect to the agent at `addr` ('unix:PATH', 'tcp:HOST:PORT' or 'vsock:CID:PORT')."""
        return cls(addr=addr, request_timeout=request_timeout, envs=envs)

    @classmethod
    def create(cls, image: Optional[str] = None, vmm: str = "qemu", memory_mb: int = 1024,
               vcpus: int = 1, network: str = "none", envs: Optional[Dict[str, str]] = None,
               timeout: Optional[float] = None, *, template: Optional[str] = None,
               request_timeout: Optional[float] = None, wait_ready: bool = True,
               extra_cmdline: str = "", kernel: Optional[str] = None,
               initramfs: Union[str, bool, None] = True, rootfs: Optional[str] = None,
               **e2b_options) -> "Sandbox":
        """Boot a micro-VM from `image` and return a Sandbox connected to it.

        `image`: a `make image` directory (default: $CELLVM_IMAGE, else
        build/image; E2B's `template` is taken as the image when `image` is
        not given). `vmm`: "qemu" (KVM when usable, else TCG),
        "firecracker" or "cloud-hypervisor" (their binary must be on PATH).
        `network`: "none" (loopback only) or "user" (QEMU's NAT).
        `envs`: environment for every execution and command of this Sandbox.
        `timeout`: seconds to wait for the VM to be ready (default 300; E2B
        uses it for the sandbox's lifetime: here the VM lives until kill()).
        With `wait_ready` (default) create() returns once the zygote has
        imported numpy, pandas and matplotlib, so the first cell runs at once.
        Raises SandboxException (TimeoutException when time ran out); nothing
        is left running then. `kernel`, `initramfs` (None/False: boot without
        one) and `rootfs` replace the image's files (cellvm.bootfiles, e.g. the
        kernel of `make kernel`). See cellvm.launch. Without `image`/`template`
        and with $CELLVM_ADDR set, connects to that agent as Sandbox() does.
        """
        if image is None and template is None and os.environ.get(ADDR_ENV):
            # As Sandbox(): an E2B program's Sandbox.create() uses the agent
            # named by $CELLVM_ADDR (dev mode) instead of booting a VM.
            return cls(envs=envs, request_timeout=request_timeout,
                       metadata=e2b_options.get("metadata"))
        return cls._boot(image=image, template=template, metadata=e2b_options.get("metadata"),
                         vmm=vmm, memory_mb=memory_mb, vcpus=vcpus, network=network, envs=envs,
                         timeout=timeout, request_timeout=request_timeout, wait_ready=wait_ready,
                         extra_cmdline=extra_cmdline, kernel=kernel, initramfs=initramfs,
                         rootfs=rootfs)

    @classmethod
    def _boot(cls, image=None, template=None, metadata=None, **launch) -> "Sandbox":
        """Boots a micro-VM and returns a Sandbox connected to it (see create)."""
        from .launch import create_sandbox
        self = create_sandbox(cls, image=image or template, **launch)
        self._metadata = dict(metadata or {})
        return self

    @classmethod
    def _from_vm(cls, vm, conn, envs=None, request_timeout=None) -> "Sandbox":
        """A Sandbox over `conn` (HELLO done) that owns `vm` (kill() stops it)."""
        self = cls.__new__(cls)
        self._addr = vm.address or f"{getattr(vm, 'vmm', 'qemu')}:{vm.pid}"
        self._envs = {str(k): str(v) for k, v in (envs or {}).items()}
        self._request_timeout = request_timeout or DEFAULT_REQUEST_TIMEOUT
        self._conn = conn
        self._closed = False
        self._vm = vm
        self._started_at = _dt.datetime.now(_dt.timezone.utc)
        self._metadata = {}
        return self

    # --- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close the connection. In-flight requests are cancelled by the agent;
        contexts outlive the connection."""
        if not self._closed:
            self._closed = True
            self._conn.close()

    def kill(self) -> None:
        """End the sandbox. A Sandbox from create() stops its VM (nothing is
        left: no process, no temp file). One from connect() only closes the
        connection: that VM's lifetime belongs to whoever launched it."""
        self.close()
        if self._vm is not None:
            self._vm.kill()

    def shutdown(self, poweroff: bool = True, timeout: float = 60.0) -> None:
        """Ask the guest to shut down cleanly: its init stops every process
        (SIGTERM, a grace period, SIGKILL), syncs, unmounts, then powers off
        (default) or takes its configured action (reboot; with reboot=k a
        Firecracker VM exits). For a VM from create(), waits up to `timeout`
        s for the VMM to exit, then stops it and removes its files as kill()
        does. Raises SandboxException if the agent is not under cellvm-init
        (dev mode)."""
        self._call(_wire.SHUTDOWN, {"poweroff": bool(poweroff)})
        self.close()
        if self._vm is None:
            return
        deadline = time.monotonic() + timeout
        while self._vm.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._vm.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()

    def is_running(self) -> bool:
        """True while the agent answers a ping."""
        try:
            self.ping()
            return True
        except (SandboxException, _wire.ConnectionClosed):
            return False

    def set_timeout(self, timeout: int, **opts) -> None:
        """E2B extends a sandbox's lifetime with it. A cellvm sandbox lives
        until kill(): accepted and ignored."""

    def get_info(self, request_timeout: Optional[float] = None) -> SandboxInfo:
        """E2B's SandboxInfo for this sandbox."""
        image = getattr(self._vm, "image", None) if self._vm is not None else None
        return SandboxInfo(sandbox_id=self.sandbox_id, template_id=image, name=None,
                           metadata=dict(self._metadata), started_at=self._started_at)

    # --- introspection -------------------------------------------------------

    @property
    def sandbox_id(self) -> str:
        return self._addr

    @property
    def vmm_pid(self) -> Optional[int]:
        """The VMM's pid for a Sandbox from create(), else None."""
        return self._vm.pid if self._vm is not None else None

    @property
    def vm(self):
        """The VM object of a Sandbox from create() (QemuVM, ...), else None."""
        return self._vm

    @property
    def hello(self) -> dict:
        """The agent's HELLO reply: version, capabilities, pid, boot stamps, ..."""
        return self._conn.hello

    @property
    def boot_report(self) -> BootReport:
        """The handshake's boot stamps as per-stage durations. In a VM the
        stamps count from the kernel's start (CLOCK_BOOTTIME), so a
        `kernel_start` stamp of 0 makes the kernel's own time the first stage."""
        stamps = dict(self._conn.hello.get("boot") or {})
        if "kernel_to_init" in stamps:
            stamps.setdefault("kernel_start", 0)
        return BootReport(stamps)

    def ping(self, payload=None, request_timeout: Optional[float] = None) -> dict:
        """Round trip to the agent; returns {payload?, time_ns}."""
        body = {} if payload is None else {"payload": payload}
        return self._call(_wire.PING, body, request_timeout)

    def set_time(self, realtime_ns: Optional[int] = None, request_timeout: Optional[float] = None) -> None:
        """Sets the guest's clock (default: this host's time), e.g. after a snapshot restore."""
        ns = time.time_ns() if realtime_ns is None else int(realtime_ns)
        self._call(_wire.SET_TIME, {"realtime_ns": ns}, request_timeout)

    def add_entropy(self, seed: Optional[bytes] = None, request_timeout: Optional[float] = None) -> int:
        """Credits `seed` (default: 64 bytes of this host's os.urandom) to the guest's
        CRNG and reseeds it, so clones of one snapshot diverge. Returns the bits credited."""
        seed = os.urandom(64) if seed is None else bytes(seed)
        return self._call(_wire.ADD_ENTROPY, {"seed": seed}, request_timeout)["credited_bits"]

    @property
    def files(self):
        """E2B's sandbox.files: read, write, list, watch_dir, ... (cellvm.files.Filesystem)."""
        from .files import Filesystem
        return Filesystem(self)

    @property
    def commands(self):
        """E2B's sandbox.commands: run, list, kill, send_stdin (cellvm.commands.Commands)."""
        from .commands import Commands
        return Commands(self)

    # --- execution -----------------------------------------------------------

    def run_code(
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
        """Run `code` in `context` (default: the default context) and return
        everything it produced. Callbacks run in the calling thread as output
        arrives. `timeout` (seconds, default 300, 0 = none) interrupts the cell
        and raises TimeoutException. Ctrl-C (KeyboardInterrupt) cancels the
        execution in the sandbox and propagates."""
        return self._run_code(code, language, context, on_stdout, on_stderr, on_result, on_error,
                              envs, timeout, request_timeout)

    def _run_code(self, code, language, context, on_stdout, on_stderr, on_result, on_error,
                  envs, timeout, request_timeout, abort=None) -> Execution:
        """run_code(); once `abort` (a threading.Event) is set, from any
        thread, the execution is cancelled in the sandbox as on Ctrl-C and
        ExecutionAborted is raised (AsyncSandbox's task cancellation)."""
        if language and context:
            raise InvalidArgumentException("You can provide context or language, but not both at the same time.")
        if language is not None and language.lower() not in ("python", "python3"):
            raise InvalidArgumentException(f"language {language!r} is not supported: cellvm runs Python only")
        timeout = None if timeout == 0 else (timeout or DEFAULT_TIMEOUT)
        request_timeout = request_timeout or self._request_timeout

        body = {"code": code}
        ctx = _context_id(context)
        if ctx is not None:
            body["context"] = ctx
        all_envs = {**self._envs, **{str(k): str(v) for k, v in (envs or {}).items()}}
        if all_envs:
            body["envs"] = all_envs
        if timeout:
            body["timeout_ms"] = max(1, int(timeout * 1000))

        req = self._request(_wire.EXECUTE, body)
        execution = Execution()
        done = False
        try:
            done = self._collect(req, execution, on_stdout, on_stderr, on_result, on_error,
                                 timeout, request_timeout, abort)
        finally:
            if not done:  # Ctrl-C, a callback raised, abort, or the guard fired
                self._cancel(req, request_timeout)
        return execution

    def _collect(self, req, execution, on_stdout, on_stderr, on_result, on_error,
                 timeout, request_timeout, abort=None) -> bool:
        """Turn the request's messages into `execution`; True once terminal."""
        started = None  # monotonic time of the last message once the cell runs
        stream = _Messages(req)
        while True:
            # Seen within _POLL_S even while no message arrives.
            if abort is not None and abort.is_set():
                raise ExecutionAborted("the execution was cancelled")
            try:
                mtype, msg = stream.next()
            except TimeoutError:
                # The agent enforces `timeout`; this only catches an agent that
                # stopped answering.
                if started is not None and timeout and time.monotonic() - started > timeout + request_timeout:
                    raise format_request_timeout_error() from None
                continue
            if started is not None or mtype == _wire.EXEC_INPUT:
                started = time.monotonic()

            if mtype == _wire.EXEC_INPUT:
                execution.execution_count = msg.get("execution_count")
            elif mtype == _wire.STREAM:
                text = msg.get("text", "")
                is_err = msg.get("name") == "stderr"
                (execution.logs.stderr if is_err else execution.logs.stdout).append(text)
                handler = on_stderr if is_err else on_stdout
                if handler:
                    handler(OutputMessage(text, time.time_ns(), is_err))
            elif mtype in (_wire.DISPLAY, _wire.RESULT):
                result = Result.from_bundle(msg.get("data") or {}, is_main_result=mtype == _wire.RESULT)
                execution.results.append(result)
                if on_result:
                    on_result(result)
            elif mtype == _wire.EXEC_ERROR:
                if execution.error is None:
                    tb = msg.get("traceback") or []
                    lines = [str(x) for x in tb] if isinstance(tb, list) else [str(tb)]
                    # E2B's server joins ipykernel's entries with "".
                    execution.error = ExecutionError(msg.get("name", ""), msg.get("value", ""),
                                                     "".join(lines), traceback_lines=lines)
                    if on_error:
                        on_error(execution.error)
            elif mtype == _wire.OK:
                if execution.execution_count is None:
                    execution.execution_count = msg.get("execution_count")
                return True
            elif mtype == _wire.ERROR:
                exc = from_agent_error(_wire.AgentError(msg.get("code", "internal"), msg.get("message", "")))
                exc.execution = execution  # what the cell produced before it ended
                raise exc
            # Unknown message types are ignored (forward compatibility).

    def _cancel(self, req, request_timeout):
        """Cancel an execution we stopped waiting for and let it wind down."""
        try:
            self._conn.call(_wire.CANCEL, {"id": req.id}, timeout=request_timeout)
        except (_wire.AgentError, _wire.ConnectionClosed, _wire.ProtocolError, TimeoutError):
            return  # already finished, or the connection is gone
        deadline = time.monotonic() + _DRAIN_S
        stream = _Messages(req)
        while time.monotonic() < deadline:
            try:
                mtype, _ = stream.next()
            except TimeoutError:
                continue
            except SandboxException:  # connection gone: nothing to drain
                return
            if mtype in _wire.TERMINAL:
                return

    def interrupt(self, context: Optional[Union[Context, str]] = None,
                  request_timeout: Optional[float] = None) -> None:
        """Raise KeyboardInterrupt in the cell running in `context` (default
        context if None). The running run_code returns with that error."""
        ctx = _context_id(context)
        self._call(_wire.INTERRUPT, {} if ctx is None else {"context": ctx}, request_timeout)

    # --- contexts ------------------------------------------------------------

    def create_code_context(self, cwd: Optional[str] = None, language: Optional[str] = None,
                            request_timeout: Optional[float] = None) -> Context:
        """A new, empty namespace in its own process."""
        body = {}
        if language:
            body["language"] = language
        if cwd:
            body["cwd"] = cwd
        return Context.from_json(self._call(_wire.CONTEXT_CREATE, body, request_timeout))

    def list_code_contexts(self, request_timeout: Optional[float] = None) -> List[Context]:
        reply = self._call(_wire.CONTEXT_LIST, {}, request_timeout)
        return [Context.from_json(c) for c in reply.get("contexts", [])]

    def restart_code_context(self, context: Union[Context, str],
                             request_timeout: Optional[float] = None) -> None:
        """Fresh process and namespace under the same id."""
        self._call(_wire.CONTEXT_RESTART, {"context": _context_id(context)}, request_timeout)

    def remove_code_context(self, context: Union[Context, str],
                            request_timeout: Optional[float] = None) -> None:
        self._call(_wire.CONTEXT_REMOVE, {"context": _context_id(context)}, request_timeout)

    delete_code_context = remove_code_context

    # --- plumbing ------------------------------------------------------------

    def _request(self, mtype, body):
        try:
            return self._conn.request(mtype, body)
        except (_wire.ConnectionClosed, _wire.ProtocolError, _wire.AgentError) as e:
            raise SandboxException(f"connection to the agent failed: {e}") from None

    def _open_extra_connection(self):
        """A second connection to the same agent (for a streamed download);
        the main one, shared, when the VM's channel takes one client only."""
        if self._vm is not None:
            return _SharedConnection(self._conn)
        return _open_connection(self._addr, self._request_timeout)

    def _call(self, mtype, body, request_timeout=None):
        return self._wait(self._request(mtype, body), request_timeout)

    def _wait(self, req, request_timeout=None):
        """The OK body of `req`, or its ERROR raised as a SandboxException."""
        try:
            for t, b in req.messages(timeout=request_timeout or self._request_timeout):
                if t == _wire.OK:
                    return b
                if t == _wire.ERROR:
                    raise from_agent_error(_wire.AgentError(b.get("code", "internal"), b.get("message", "")))
        except TimeoutError:
            raise format_request_timeout_error() from None
        except (_wire.ConnectionClosed, _wire.ProtocolError, _wire.AgentError) as e:
            raise SandboxException(f"connection to the agent failed: {e}") from None
        raise SandboxException("request ended without a terminal message")
