"""CodeInterpreter: E2B's earlier (0.x) Python API, the legacy name, over today's Sandbox.

    from cellvm import CodeInterpreter      # or: from e2b_code_interpreter import CodeInterpreter
    with CodeInterpreter() as sandbox:
        sandbox.notebook.exec_cell("x = 1")
        print(sandbox.notebook.exec_cell("x += 1; x").text)   # 2

Tutorials and agent-framework tools written for e2b_code_interpreter 0.x
(CrewAI's, Mistral's cookbook) run on it unchanged. Each old name maps onto
today's API (docs/SDK.md, "The legacy name (E2B 0.x)"); anything else is
today's Sandbox's (`sandbox.run_code`, `.files`, `.commands`, ...).
"""

import datetime as _dt
import inspect
import os
import posixpath
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Union

from .exceptions import CommandExitException
from .models import (Context, Execution, FileType, OutputMessage, SandboxInfo, SandboxQuery,
                     SandboxState)
from .sandbox import Sandbox, _class_or_instance

OutputCallback = Optional[Callable[[OutputMessage], Any]]


class Notebook:
    """E2B 0.x's `sandbox.notebook` (its JupyterExtension): cells and kernels,
    a kernel being today's code context and a kernel id its context id."""

    def __init__(self, sandbox: Sandbox):
        self._sbx = sandbox

    @property
    def default_kernel_id(self) -> str:
        """The id of the context exec_cell runs in when given no kernel_id."""
        return self._sbx.hello["default_context"]

    def exec_cell(self, code: str, kernel_id: Optional[Union[str, Context]] = None,
                  on_stdout: OutputCallback = None, on_stderr: OutputCallback = None,
                  on_result: Optional[Callable[[Any], Any]] = None, timeout: Optional[float] = None,
                  *, envs: Optional[Dict[str, str]] = None,
                  request_timeout: Optional[float] = None) -> Execution:
        """run_code(code, context=kernel_id, ...): the Execution (`results`,
        `logs`, `error`, `text`) E2B 0.x returned. on_stdout/on_stderr get
        OutputMessages (`line`, `error`, `timestamp`, as E2B's ProcessMessage);
        `timeout` (seconds, default 300) interrupts the cell and raises
        TimeoutException; the kernel and its variables survive."""
        return self._sbx.run_code(code, context=kernel_id, on_stdout=on_stdout, on_stderr=on_stderr,
                                  on_result=on_result, envs=envs, timeout=timeout,
                                  request_timeout=request_timeout)

    def create_kernel(self, cwd: Optional[str] = None, kernel_name: Optional[str] = None,
                      timeout: Optional[float] = None) -> str:
        """create_code_context(cwd, language=kernel_name): the new kernel's id.
        `kernel_name` "python3" (E2B's default) is Python; None works in the
        sandbox's default directory (E2B 0.x: /home/user)."""
        return self._sbx.create_code_context(cwd=cwd, language=kernel_name, request_timeout=timeout).id

    def restart_kernel(self, kernel_id: Optional[str] = None, timeout: Optional[float] = None) -> None:
        """restart_code_context(): a fresh namespace under the same id."""
        self._sbx.restart_code_context(kernel_id or self.default_kernel_id, request_timeout=timeout)

    def shutdown_kernel(self, kernel_id: Optional[str] = None, timeout: Optional[float] = None) -> None:
        """remove_code_context()."""
        self._sbx.remove_code_context(kernel_id or self.default_kernel_id, request_timeout=timeout)

    def list_kernels(self, timeout: Optional[float] = None) -> List[str]:
        """The ids of list_code_contexts()."""
        return [c.id for c in self._sbx.list_code_contexts(request_timeout=timeout)]

    def close(self) -> None:
        """E2B 0.x closed its kernels' websockets here; cellvm has none to close."""


@dataclass
class FileInfo:
    """E2B 0.x's FileInfo: an entry of filesystem.list()."""

    is_dir: bool
    name: str


class Filesystem:
    """E2B 0.x's `sandbox.filesystem` over today's `sandbox.files`. A relative
    path is taken from the CodeInterpreter's `cwd` when it has one, else
    from the sandbox user's home, as E2B 0.x did. `timeout` is the request's."""

    def __init__(self, interpreter: "CodeInterpreter"):
        self._ci = interpreter

    def _path(self, path: str) -> str:
        cwd = self._ci.cwd
        return posixpath.join(cwd, path) if cwd and not path.startswith("/") else path

    @property
    def _files(self):
        return self._ci.sandbox.files

    def read(self, path: str, timeout: Optional[float] = None) -> str:
        return self._files.read(self._path(path), request_timeout=timeout)

    def read_bytes(self, path: str, timeout: Optional[float] = None) -> bytes:
        return bytes(self._files.read(self._path(path), format="bytes", request_timeout=timeout))

    def write(self, path: str, content: str, timeout: Optional[float] = None) -> None:
        self._files.write(self._path(path), content, request_timeout=timeout)

    def write_bytes(self, path: str, content: bytes, timeout: Optional[float] = None) -> None:
        self._files.write(self._path(path), bytes(content), request_timeout=timeout)

    def remove(self, path: str, timeout: Optional[float] = None) -> None:
        self._files.remove(self._path(path), request_timeout=timeout)

    def list(self, path: str, timeout: Optional[float] = None) -> List[FileInfo]:
        return [FileInfo(is_dir=e.type == FileType.DIR, name=e.name)
                for e in self._files.list(self._path(path), request_timeout=timeout)]

    def make_dir(self, path: str, timeout: Optional[float] = None) -> None:
        self._files.make_dir(self._path(path), request_timeout=timeout)


class ProcessOutput:
    """E2B 0.x's ProcessOutput: the lines a process wrote, in order (each an
    OutputMessage, `error` True for stderr); `stdout`/`stderr` join them with
    "\\n"; `error` is True once it wrote to stderr."""

    delimiter = "\n"

    def __init__(self):
        self.messages: List[OutputMessage] = []
        self.error = False
        self.exit_code: Optional[int] = None

    @property
    def stdout(self) -> str:
        return self.delimiter.join(m.line for m in self.messages if not m.error)

    @property
    def stderr(self) -> str:
        return self.delimiter.join(m.line for m in self.messages if m.error)


class _Lines:
    """A stream's chunks cut into lines: E2B 0.x's envd sent a process's
    output a line at a time, without the newline."""

    def __init__(self, output: ProcessOutput, error: bool, callback: OutputCallback):
        self._output, self._error, self._callback = output, error, callback
        self._rest = ""

    def feed(self, text: str) -> None:
        *lines, self._rest = (self._rest + text).split("\n")
        for line in lines:
            self._emit(line)

    def flush(self) -> None:
        if self._rest:
            self._emit(self._rest)
            self._rest = ""

    def _emit(self, line: str) -> None:
        msg = OutputMessage(line, time.time_ns(), self._error)
        self._output.messages.append(msg)
        self._output.error = self._output.error or self._error
        if self._callback:
            self._callback(msg)


class Process:
    """E2B 0.x's Process: a command process.start() started (today's
    CommandHandle). Its callbacks run while wait() follows its output."""

    def __init__(self, handle, on_stdout: OutputCallback, on_stderr: OutputCallback,
                 on_exit: Optional[Callable[..., Any]]):
        self._handle = handle
        self.output = ProcessOutput()
        self._stdout = _Lines(self.output, False, on_stdout)
        self._stderr = _Lines(self.output, True, on_stderr)
        self._on_exit = on_exit
        self._done = False

    @property
    def process_id(self) -> str:
        return str(self._handle.pid)

    @property
    def exit_code(self) -> Optional[int]:
        return self.output.exit_code

    @property
    def stdout(self) -> str:
        return self.output.stdout

    @property
    def stderr(self) -> str:
        return self.output.stderr

    @property
    def error(self) -> bool:
        return self.output.error

    @property
    def output_messages(self) -> List[OutputMessage]:
        return self.output.messages

    def wait(self) -> ProcessOutput:
        """Follows the output until the process exits; a non-zero exit code
        is the output's `exit_code`, not an exception (E2B 0.x)."""
        if not self._done:
            try:
                exit_code = self._handle.wait(on_stdout=self._stdout.feed,
                                              on_stderr=self._stderr.feed).exit_code
            except CommandExitException as e:
                exit_code = e.exit_code
            self._stdout.flush()
            self._stderr.flush()
            self.output.exit_code = exit_code
            self._done = True
            if self._on_exit:
                # E2B 0.x called on_exit() or on_exit(exit_code), as it was declared.
                params = inspect.signature(self._on_exit).parameters
                self._on_exit(exit_code) if params else self._on_exit()
        return self.output

    def kill(self, timeout: Optional[float] = None) -> None:
        self._handle._commands.kill(self._handle.pid, request_timeout=timeout)

    def send_stdin(self, data: str, timeout: Optional[float] = None) -> None:
        self._handle.send_stdin(data, request_timeout=timeout)


class ProcessManager:
    """E2B 0.x's `sandbox.process` over today's `sandbox.commands`: a command
    runs with `bash -l -c` (cwd: `cwd`, else the CodeInterpreter's, else the
    user's home), its stdin open and without a time limit, as in E2B 0.x,
    whose `timeout` bounded the start request only."""

    def __init__(self, interpreter: "CodeInterpreter", on_stdout: OutputCallback = None,
                 on_stderr: OutputCallback = None, on_exit: Optional[Callable[..., Any]] = None):
        self._ci = interpreter
        self._on_stdout, self._on_stderr, self._on_exit = on_stdout, on_stderr, on_exit

    def start(self, cmd: str, on_stdout: OutputCallback = None, on_stderr: OutputCallback = None,
              on_exit: Optional[Callable[..., Any]] = None, env_vars: Optional[Dict[str, str]] = None,
              cwd: str = "", process_id: Optional[str] = None,
              timeout: Optional[float] = None) -> Process:
        # process_id is accepted and unused: a command is known by its pid.
        handle = self._ci.sandbox.commands.run(cmd, background=True, envs=env_vars,
                                               cwd=cwd or self._ci.cwd or None, stdin=True,
                                               timeout=0, request_timeout=timeout)
        return Process(handle, on_stdout or self._on_stdout, on_stderr or self._on_stderr,
                       on_exit or self._on_exit)

    def start_and_wait(self, cmd: str, on_stdout: OutputCallback = None,
                       on_stderr: OutputCallback = None, on_exit: Optional[Callable[..., Any]] = None,
                       env_vars: Optional[Dict[str, str]] = None, cwd: str = "",
                       process_id: Optional[str] = None, timeout: Optional[float] = None) -> ProcessOutput:
        """start(...).wait(): the ProcessOutput (`stdout`, `stderr`, `exit_code`)."""
        return self.start(cmd, on_stdout, on_stderr, on_exit, env_vars, cwd, process_id, timeout).wait()


class CodeInterpreter:
    """E2B 0.x's CodeInterpreter, the legacy name of today's Sandbox.

    `CodeInterpreter(...)` starts a sandbox as `Sandbox.create(...)` does
    (the agent at $CELLVM_ADDR, else a micro-VM) and takes its arguments:
    `template`, `timeout` (the sandbox's lifetime in seconds), `envs` (or
    E2B 0.x's `env_vars`), `metadata`, `api_key` (ignored) and cellvm's own
    (`image`, `memory_mb`, ...). `cwd` is where processes start and relative
    filesystem paths begin; `on_stdout`/`on_stderr`/`on_exit` are the
    processes' default callbacks.

    `close()` (and the end of a `with` block) ends the sandbox, as closing
    E2B 0.x's connection did, unless keep_alive() was called or the
    CodeInterpreter came from reconnect(): then only the connection closes
    and the sandbox lives until its timeout. Today's API is there too:
    `sandbox.run_code`, `.files`, `.commands`, `.set_timeout`, ... reach the
    Sandbox (also `.sandbox`).
    """

    def __init__(self, template: Optional[str] = None, api_key: Optional[str] = None,
                 cwd: Optional[str] = None, env_vars: Optional[Dict[str, str]] = None,
                 timeout: Optional[float] = None, on_stdout: OutputCallback = None,
                 on_stderr: OutputCallback = None, on_exit: Optional[Callable[..., Any]] = None,
                 *, envs: Optional[Dict[str, str]] = None, metadata: Optional[Dict[str, str]] = None,
                 **options):
        sandbox = Sandbox.create(template=template, timeout=timeout,
                                 envs=env_vars if envs is None else envs, metadata=metadata,
                                 api_key=api_key, **options)
        self._attach(sandbox, cwd, on_stdout, on_stderr, on_exit, kill_on_close=True)

    def _attach(self, sandbox, cwd, on_stdout, on_stderr, on_exit, kill_on_close):
        self.sandbox = sandbox
        self.cwd = cwd
        # E2B 0.x's sandbox ended with its connection unless kept alive.
        self._kill_on_close = kill_on_close
        self.notebook = Notebook(sandbox)
        self.filesystem = Filesystem(self)
        self.process = ProcessManager(self, on_stdout, on_stderr, on_exit)
        if cwd:
            try:
                self.filesystem.make_dir(cwd)  # E2B 0.x made it on open
            except BaseException:
                self.close()
                raise

    @classmethod
    def create(cls, *args, **kwargs) -> "CodeInterpreter":
        """E2B 0.x's deprecated spelling of CodeInterpreter(...)."""
        return cls(*args, **kwargs)

    @classmethod
    def reconnect(cls, sandbox_id: str, cwd: Optional[str] = None,
                  env_vars: Optional[Dict[str, str]] = None, on_stdout: OutputCallback = None,
                  on_stderr: OutputCallback = None, on_exit: Optional[Callable[..., Any]] = None,
                  timeout: Optional[float] = None, api_key: Optional[str] = None,
                  **options) -> "CodeInterpreter":
        """Sandbox.connect(sandbox_id): a CodeInterpreter on a running sandbox
        (one kept alive, say). `timeout` bounds the connection, as in E2B 0.x;
        close() leaves the sandbox running until its timeout."""
        self = cls.__new__(cls)
        self._attach(Sandbox.connect(sandbox_id, request_timeout=timeout, envs=env_vars, **options),
                     cwd, on_stdout, on_stderr, on_exit, kill_on_close=False)
        return self

    connect = reconnect  # E2B 0.0.11's name

    @staticmethod
    def list(api_key: Optional[str] = None) -> List[SandboxInfo]:
        """The running sandboxes, as a list (today's Sandbox.list() pages them):
        `sandbox_id`, `template_id`, `metadata`, `started_at`, ..."""
        paginator = Sandbox.list(query=SandboxQuery(state=[SandboxState.RUNNING]))
        infos = []
        while paginator.has_next:
            infos.extend(paginator.next_items())
        return infos

    @property
    def id(self) -> str:
        """The sandbox's id (for reconnect())."""
        return self.sandbox.sandbox_id

    @property
    def sandbox_id(self) -> str:
        return self.sandbox.sandbox_id

    def keep_alive(self, duration: float) -> None:
        """Keep the sandbox alive `duration` seconds from now, also after
        close() and after this program exits (E2B 0.x). Maps onto
        set_timeout(duration), which it never shortens: a sandbox whose end
        is later keeps it. An agent in dev mode has no lifetime (a warning)."""
        if duration < 0:
            raise ValueError("Duration must be at least 0 seconds")
        end = self.sandbox.get_info().end_at
        now = _dt.datetime.now(_dt.timezone.utc)
        if end is None or end < now + _dt.timedelta(seconds=duration):
            self.sandbox.set_timeout(duration)
        vm = self.sandbox.vm
        if vm is not None:
            vm.detached = True  # not killed at this process's exit (cellvm.launch)
        self._kill_on_close = False

    def upload_file(self, file, timeout: Optional[float] = None) -> str:
        """Writes the open file to the sandbox user's home under its own name;
        returns the path it has there (E2B 0.x: /home/user/NAME)."""
        name = os.path.basename(file.name)
        return self.sandbox.files.write(name, file, request_timeout=timeout).path

    def download_file(self, remote_path: str, timeout: Optional[float] = None) -> bytes:
        return bytes(self.sandbox.files.read(remote_path, format="bytes", request_timeout=timeout))

    @_class_or_instance("_cls_kill")
    def kill(self, **opts) -> bool:
        """Ends the sandbox now (today's kill()); `CodeInterpreter.kill(id)` too."""
        return self.sandbox.kill(**opts)

    @classmethod
    def _cls_kill(cls, sandbox_id: str, api_key: Optional[str] = None, **opts) -> bool:
        return Sandbox.kill(sandbox_id, **opts)

    def close(self) -> None:
        """E2B 0.x's close(): the sandbox ends, as it did once its connection
        closed (kill(): an agent in dev mode only loses the connection),
        unless keep_alive() was called or this came from reconnect(): then
        the connection closes and the sandbox lives until its timeout."""
        if self._kill_on_close:
            self.sandbox.kill()
        else:
            self.sandbox.close()

    def __enter__(self) -> "CodeInterpreter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getattr__(self, name):
        # Today's API (run_code, files, commands, set_timeout, ...) is the Sandbox's.
        if name == "sandbox":
            raise AttributeError(name)
        return getattr(self.sandbox, name)
