"""sandbox.commands: E2B's Commands API over the commands service (docs/PROTOCOL.md section 10)."""

import codecs
import time
import weakref
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Union

from . import _wire
from .exceptions import (
    CommandExitException,
    NotFoundException,
    SandboxException,
    format_long_request_timeout_error,
    format_request_timeout_error,
    format_sandbox_terminated_error,
    from_agent_error,
)
from .models import CommandResult, ProcessInfo
from ._messages import _Messages

_END_WAIT_S = 1.0  # as sandbox._END_WAIT_S (no import of sandbox.py here)

CMD_START = 0x0200
CMD_LIST = 0x0201
CMD_KILL = 0x0202
CMD_STDIN = 0x0203
CMD_CONNECT = 0x0204
CMD_RESIZE = 0x0205
CMD_STARTED = 0x8200
CMD_OUTPUT = 0x8201

DEFAULT_TIMEOUT = 60.0
"""Seconds a command may run when run() gets no timeout (E2B's default)."""


class CommandHandle:
    """A started command (E2B's CommandHandle): output accumulates as it
    arrives; wait() returns the CommandResult or raises CommandExitException."""

    def __init__(self, commands, req, pid, timeout):
        self._commands = commands
        self._req = req
        self.pid = pid
        self._timeout = timeout
        self._disconnected = False
        self._stdout: List[str] = []
        self._stderr: List[str] = []
        self._dec = {"stdout": codecs.getincrementaldecoder("utf-8")("replace"),
                     "stderr": codecs.getincrementaldecoder("utf-8")("replace")}
        self._result: Optional[CommandResult] = None
        self._exc: Optional[BaseException] = None
        self._msgs = _Messages(req)

    @property
    def stdout(self) -> str:
        return "".join(self._stdout)

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    @property
    def exit_code(self) -> Optional[int]:
        return self._result.exit_code if self._result else None

    @property
    def error(self) -> Optional[str]:
        return self._result.error if self._result else None

    def _next(self):
        """The next (type, body), or TimeoutError after _messages.POLL_S."""
        return self._msgs.next()

    def _events(self) -> Iterator[Tuple[Optional[str], Optional[str], Optional[bytes]]]:
        """(stdout, stderr, pty) pieces until the command ends; sets _result or _exc."""
        guard = None
        if self._timeout:
            guard = time.monotonic() + self._timeout + self._commands._sbx._request_timeout
        while self._result is None and self._exc is None:
            if self._disconnected:
                return
            try:
                mtype, msg = self._next()
            except TimeoutError:
                if guard and time.monotonic() > guard:
                    raise format_request_timeout_error() from None
                continue
            except SandboxException as e:
                # kill() closed the connection under the command, or the
                # sandbox ended (its timeout, a kill from elsewhere): E2B's error.
                sbx = self._commands._sbx
                if not (sbx._was_killed() or (getattr(e, "connection_failed", False)
                                              and sbx._ended(_END_WAIT_S))):
                    raise
                raise format_sandbox_terminated_error() from None
            if self._disconnected:
                # disconnect() came while this thread waited: the end is for
                # whoever connects next; output is dropped as after disconnect.
                if mtype in _wire.TERMINAL:
                    with self._req.conn._cv:
                        self._req._items.appendleft((mtype, msg))
                return
            if mtype == CMD_OUTPUT and msg.get("stream") == "pty":
                data = msg.get("data", b"")
                if isinstance(data, bytes) and data:
                    yield None, None, data  # a terminal's raw bytes, as E2B's PtyOutput
            elif mtype == CMD_OUTPUT:
                name = "stderr" if msg.get("stream") == "stderr" else "stdout"
                text = self._dec[name].decode(msg.get("data", b""))
                if text:
                    (self._stderr if name == "stderr" else self._stdout).append(text)
                    yield (None, text, None) if name == "stderr" else (text, None, None)
            elif mtype == _wire.OK:
                for name, acc in (("stdout", self._stdout), ("stderr", self._stderr)):
                    tail = self._dec[name].decode(b"", final=True)
                    if tail:
                        acc.append(tail)
                self._result = CommandResult(stderr=self.stderr, stdout=self.stdout,
                                             exit_code=msg.get("exit_code", -1), error=msg.get("error"))
            elif mtype == _wire.ERROR:
                code = msg.get("code", "internal")
                if code == "timeout":
                    self._exc = format_long_request_timeout_error()
                elif code == "cancelled":
                    self._result = CommandResult(stderr=self.stderr, stdout=self.stdout, exit_code=-1,
                                                 error="signal: killed")
                else:
                    self._exc = from_agent_error(_wire.AgentError(code, msg.get("message", "")))

    def __iter__(self):
        """(stdout, stderr, pty) tuples as output arrives, like E2B's handle;
        a command past its `timeout` raises TimeoutException here too (E2B's
        test_run_with_too_short_timeout_iterating)."""
        yield from self._events()
        if self._exc is not None:
            raise self._exc

    def wait(self, on_pty: Optional[Callable[[bytes], None]] = None,
             on_stdout: Optional[Callable[[str], None]] = None,
             on_stderr: Optional[Callable[[str], None]] = None) -> CommandResult:
        for out, err, pty in self._events():
            if out is not None and on_stdout:
                on_stdout(out)
            if err is not None and on_stderr:
                on_stderr(err)
            if pty is not None and on_pty:
                on_pty(pty)
        if self._exc is not None:
            raise self._exc
        r = self._result
        if r.exit_code != 0:
            raise CommandExitException(stderr=r.stderr, stdout=r.stdout, exit_code=r.exit_code,
                                       error=r.error)
        return r

    def kill(self) -> bool:
        """SIGKILL the command (and its process group). False if it already ended."""
        return self._commands.kill(self.pid)

    def send_stdin(self, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        """Write `data` to the command's stdin (started with stdin=True)."""
        self._commands.send_stdin(self.pid, data, request_timeout)

    def close_stdin(self, request_timeout: Optional[float] = None) -> None:
        """Close the command's stdin (EOF) once what was sent is written."""
        self._commands.close_stdin(self.pid, request_timeout)

    def disconnect(self) -> None:
        """Stop following the output; the command keeps running (background
        only) and commands.connect(pid) follows it again, from then on (the
        output in between is dropped, as E2B's connect streams what comes
        after)."""
        self._disconnected = True
        self._req.discard()
        self._result = self._result or CommandResult(self.stderr, self.stdout, -1, "disconnected")


class Commands:
    """E2B's sandbox.commands."""

    def __init__(self, sandbox):
        self._sbx = sandbox

    def run(self, cmd: str, background: Optional[bool] = None, envs: Optional[Dict[str, str]] = None,
            user: Optional[str] = None, cwd: Optional[str] = None,
            on_stdout: Optional[Callable[[str], None]] = None,
            on_stderr: Optional[Callable[[str], None]] = None, stdin: Optional[bool] = None,
            timeout: Optional[float] = DEFAULT_TIMEOUT,
            request_timeout: Optional[float] = None) -> Union[CommandResult, CommandHandle]:
        """Run `cmd` with `/bin/bash -l -c` in the user's home (or `cwd`).
        Foreground: waits and returns CommandResult, raising CommandExitException
        on a non-zero exit. background=True: returns a CommandHandle at once.
        `timeout` seconds (0 = none) kills the command and raises TimeoutException."""
        handle = self._start(cmd, background, envs, user, cwd, stdin, timeout, request_timeout)
        if background:
            return handle
        try:
            return handle.wait(on_stdout=on_stdout, on_stderr=on_stderr)
        except KeyboardInterrupt:
            self._sbx._cancel(handle._req, request_timeout or self._sbx._request_timeout)
            raise

    def _start(self, cmd, background, envs, user, cwd, stdin, timeout, request_timeout,
               **extra) -> CommandHandle:
        """Starts `cmd` as run() does and returns its handle once it runs
        (AsyncCommands follows the output itself). `extra`: more CMD_START
        fields (Pty's argv and pty, with cmd None)."""
        body = {"cmd": cmd} if cmd is not None else {}
        body.update(extra)
        # The sandbox's environment apart: commands.list() shows a start's own envs (E2B).
        body["sandbox_envs"] = self._sbx._sandbox_envs()
        if envs:
            body["envs"] = {str(k): str(v) for k, v in envs.items()}
        if user is not None:
            body["user"] = user
        if cwd is not None:
            body["cwd"] = cwd
        if stdin:
            body["stdin"] = True
        if background:
            body["background"] = True
        if timeout:
            body["timeout_ms"] = max(1, int(timeout * 1000))
        req = self._sbx._request(CMD_START, body)
        pid = self._started(req, request_timeout)
        _followed(self._sbx)[pid] = req
        return CommandHandle(self, req, pid, timeout)

    def _started(self, req, request_timeout):
        try:
            for mtype, msg in req.messages(timeout=request_timeout or self._sbx._request_timeout):
                if mtype == CMD_STARTED:
                    return msg.get("pid")
                if mtype == _wire.ERROR:
                    raise from_agent_error(_wire.AgentError(msg.get("code", "internal"), msg.get("message", "")))
        except TimeoutError:
            raise format_request_timeout_error() from None
        except (_wire.ConnectionClosed, _wire.ProtocolError) as e:
            raise self._sbx._connection_error(e, getattr(req, "mtype", None)) from None
        raise SandboxException("command ended before it started")

    def list(self, request_timeout: Optional[float] = None) -> List[ProcessInfo]:
        """The commands running in the sandbox (from any connection). As in
        E2B, `cmd` is the shell and `args` its arguments: ["-l", "-c", cmd]."""
        reply = self._sbx._call(CMD_LIST, {}, request_timeout, rpc=True)
        return [ProcessInfo(pid=p.get("pid"), tag=p.get("tag"), cmd="/bin/bash",
                            args=["-l", "-c", p.get("cmd", "")], envs=p.get("envs") or {},
                            cwd=p.get("cwd"))
                for p in reply.get("processes", [])]

    def connect(self, pid: int, timeout: Optional[float] = DEFAULT_TIMEOUT,
                request_timeout: Optional[float] = None) -> CommandHandle:
        """Follow a running command again (E2B's commands.connect): a
        CommandHandle for `pid`, receiving the output from now on. A command
        started through this Sandbox is followed again (after
        handle.disconnect(), say); one a client that has gone started in the
        background is taken over (CMD_CONNECT). One that another live
        connection follows is a SandboxException; an unknown pid
        NotFoundException."""
        pid = int(pid)
        req = _followed(self._sbx).get(pid)
        if req is None or (req.id not in req.conn._pending and not req.has_message()):
            req = self._sbx._request(CMD_CONNECT, {"pid": pid})
            try:
                self._started(req, request_timeout)
            except NotFoundException:
                raise NotFoundException(f"process with pid {pid} not found", code="not_found") from None
            except SandboxException as e:
                if getattr(e, "code", None) != "busy":
                    raise
                raise SandboxException(f"cannot connect to command {pid}: another connection "
                                       "follows its output (kill and send_stdin reach it)", code="busy") from None
            _followed(self._sbx)[pid] = req
            return CommandHandle(self, req, pid, timeout)
        req.drop_arrived()  # as E2B's connect: the output from now on
        return CommandHandle(self, req, pid, timeout)

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """SIGKILL command `pid`; False if there is no such command. Returns
        once the agent has reaped it (its CMD_KILL answers then), as envd's
        kill: a `kill -0 PID` right after finds no process, not a zombie."""
        try:
            self._sbx._call(CMD_KILL, {"pid": int(pid)}, request_timeout, rpc=True)
        except NotFoundException:
            return False
        return True

    def send_stdin(self, pid: int, data: Union[str, bytes], request_timeout: Optional[float] = None) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8")
        self._sbx._call(CMD_STDIN, {"pid": int(pid), "data": bytes(data)}, request_timeout,
                        rpc=True)

    def close_stdin(self, pid: int, request_timeout: Optional[float] = None) -> None:
        self._sbx._call(CMD_STDIN, {"pid": int(pid), "eof": True}, request_timeout, rpc=True)


def _followed(sbx):
    """pid -> the CMD_START request of the commands this Sandbox started (and
    connect()'s views of it share), for commands.connect(pid)."""
    followed = sbx.__dict__.get("_followed_commands")
    if followed is None:
        followed = sbx.__dict__.setdefault("_followed_commands", weakref.WeakValueDictionary())
    return followed
