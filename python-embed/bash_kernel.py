"""The executor of bash contexts (docs/PROTOCOL.md section 8), embedded as
module `cellvm_bash`.

It runs in an executor forked from the zygote, after the same confinement
as a Python context (sandbox user, seccomp, cgroup, rlimits), and drives one
bash process that lives as long as the context, as E2B's bash kernel
(bash_kernel, an interactive bash behind pexpect) does:

- bash is interactive (`-i`, without line editing or job control), so an
  interrupt aborts the whole running cell and returns to the top level while
  the shell, its variables, functions and working directory survive; error
  messages read as in a terminal ("bash: x: command not found");
- each cell is read by bash from a pipe of its own and run with `eval` at the
  top level (not in a function: `declare` and `local` behave as typed at a
  prompt); stdin of the cell is /dev/null (`read` sees end of file);
- bash writes its stdout and stderr, and its commands', to one pipe that
  this driver reads and sends on as STREAM stdout messages, one per line:
  bash_kernel runs bash on a pseudo-terminal, so what E2B's bash contexts
  print on stderr ("bash: x: command not found", `>&2`) comes as stdout, and
  its IREPLWrapper sends each line (ended by \n or \r) as one 'stream'
  message, a partial line when the prompt comes back (E2B installs it:
  template/template.py, `pip install bash_kernel`; bash_kernel/kernel.py);
- bash reports each cell's exit status on a pipe of its own. A non-zero
  status of the cell's last command is the error E2B gives for it:
  name "", value the status, no traceback;
- an interrupt (SIGINT from the agent, on INTERRUPT or a timeout) is passed
  to the whole process group (bash and the cell's processes; background jobs
  ignore it, as without job control in a terminal); the cell ends with E2B's
  ExecutionAborted. A cell that ignores it is killed with its group by the
  agent 2 s later (the context restarts, as a Python one);
- if bash exits (`exit` in a cell), it is started again and the cell's output
  ends with "Restarting Bash", as bash_kernel does;
- in a copy of a snapshot (a new epoch in X_EXECUTE) bash's $RANDOM is seeded
  anew before the cell, as this process's Python state (cellvm_reseed).
"""

import codecs
import os
import re
import select
import signal
import subprocess
import sys
import tempfile

import _cellvm
import cellvm_reseed

X_READY = 0x4010
X_EXECUTE = 0x4011
X_END = 0x4012
EXEC_INPUT = 0x8010
STREAM = 0x8011
EXEC_ERROR = 0x8014

# Longest wait for the agent to read output written before a message (kernel/session.py's).
OUTPUT_DRAIN_TIMEOUT = 0.05

# Where bash finds the cell's text and writes the statuses. High numbers: a cell's
# own `exec 3>file` does not meet them (and eval runs with them closed).
CODE_FD = 60
STATUS_FD = 61

# A line longer than this is sent in pieces (bash_kernel's has no bound).
LINE_MAX = 64 * 1024
# What a cell's end reads of output still in the pipe at most (a background job
# writing without pause must not hold the cell's end up).
END_DRAIN_MAX = 1 << 20

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Run once in each new bash, before any cell.
_SETUP = """exec 2>&1
set +o history +H
export -n PS1 PS2
PS4='+ ' PROMPT_COMMAND=
export PAGER=cat
"""


def _quote(s):
        """s as one bash word (NUL cannot be in a bash string: dropped)."""
        return "'" + str(s).replace("\0", "").replace("'", "'\\''") + "'"


class _Gone(Exception):
        """bash exited (or closed its status pipe)."""


class Bash:
        def __init__(self):
                self.proc = None
                self.ctl = -1  # bash's stdin: the lines it runs
                self.code = None  # the cell's text, read by bash at CODE_FD (a shared offset)
                self.status_r = -1
                self.buf = b""
                self.serial = 0
                self.pending = False  # an interrupt came during this execution
                self.waiting = False  # it raises KeyboardInterrupt at once
                self.out_r = -1  # bash's stdout and stderr
                self.line = b""  # the output's last, unfinished line
                self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
                self.on_output = None  # sends one line of output (text)

        def on_sigint(self, signum, frame):
                self.pending = True
                if self.waiting:
                        raise KeyboardInterrupt

        def start(self):
                # A file, not a pipe: an interrupted `read` leaves nothing behind for
                # the next cell to read, and bash reads a seekable fd in blocks.
                self.code = tempfile.TemporaryFile(prefix="cellvm-bash-")
                self.status_r, status_w = os.pipe()
                ctl_r, self.ctl = os.pipe()
                self.out_r, out_w = os.pipe()
                os.set_blocking(self.out_r, False)
                self.line = b""
                self.decoder.reset()
                fds = {CODE_FD: self.code.fileno(), STATUS_FD: status_w}
                # Its start-up notices ("no job control in this shell") go nowhere; the
                # first line it runs sends stderr to stdout, as a terminal would.
                devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
                # A caught SIGINT is reset to the default by exec; an ignored one (ours
                # between cells) would stay ignored in bash and everything it starts.
                saved = signal.signal(signal.SIGINT, self.on_sigint)
                try:
                        self.proc = subprocess.Popen(
                                ["bash", "--norc", "--noprofile", "--noediting", "-i", "+m"],
                                stdin=ctl_r, stdout=out_w, stderr=devnull, close_fds=True,
                                pass_fds=tuple(fds.values()),
                                # No prompts (bash takes them from its environment).
                                env=dict(os.environ, PS1="", PS2=""))
                finally:
                        signal.signal(signal.SIGINT, saved)
                        for fd in (ctl_r, status_w, out_w, devnull):
                                os.close(fd)
                # pass_fds keeps the numbers they have here: bash moves them up.
                moves = " ".join(f"{want}>&{have} {have}>&-" for want, have in fds.items())
                self.buf = b""
                self._line(f"exec {moves}\n{_SETUP}")

        def _line(self, text):
                data = text.encode("utf-8", "surrogateescape")
                while data:
                        n = os.write(self.ctl, data)
                        data = data[n:]

        def run(self, code):
                """Runs one cell; returns its exit status, or None if interrupted.
                Raises _Gone if bash exited."""
                self.serial += 1
                tag = f"c{self.serial}"
                fd = self.code.fileno()
                os.ftruncate(fd, 0)
                os.pwrite(fd, code.encode("utf-8", "surrogateescape").replace(b"\0", b"") + b"\0", 0)
                os.lseek(fd, 0, os.SEEK_SET)
                # One line of less than PIPE_BUF bytes: written whole or not at all.
                self._line(f"IFS= read -r -d '' __cellvm_code <&{CODE_FD}; "
                           f"eval \"$__cellvm_code\" </dev/null {CODE_FD}<&- {STATUS_FD}>&-; "
                           f"echo \"{tag} $?\" >&{STATUS_FD}\n")
                try:
                        return int(self._next_tag((tag,))[1])
                except KeyboardInterrupt:
                        return self.interrupt(tag)
                finally:
                        self.end_output()

        def interrupt(self, tag):
                """SIGINT to the process group: bash drops the cell (its text was
                read whole before it ran, so nothing of it is left to run) and
                returns to its top level. Later interrupts change nothing: the
                agent's kill follows if bash does not come back."""
                self.pending = False
                os.killpg(0, signal.SIGINT)  # ours is ignored (on_sigint: waiting is off)
                ack = f"a{self.serial}"
                self._line(f"echo {ack} >&{STATUS_FD}\n")
                # The cell's status, if it finished before the signal, comes first.
                got, value = self._next_tag((tag, ack), interruptible=False)
                if got == ack:
                        return None
                self._next_tag((ack,), interruptible=False)
                return int(value)

        def _next_tag(self, tags, interruptible=True):
                """Waits for bash to report one of `tags` (ids it was given); returns
                (tag, what followed it). Others (of cells cut short) are dropped."""
                while True:
                        nl = self.buf.find(b"\n")
                        while nl >= 0:
                                line, self.buf = self.buf[:nl], self.buf[nl + 1:]
                                tag, _, value = line.decode("ascii", "replace").partition(" ")
                                if tag in tags:
                                        return tag, value
                                nl = self.buf.find(b"\n")
                        if interruptible and self.pending:
                                raise KeyboardInterrupt
                        fds = [self.status_r] + ([self.out_r] if self.out_r >= 0 else [])
                        self.waiting = interruptible
                        try:
                                ready, _, _ = select.select(fds, [], [])
                        finally:
                                self.waiting = False
                        if self.out_r in ready:
                                self.read_output()
                        if self.status_r not in ready:
                                continue
                        chunk = os.read(self.status_r, 4096)
                        if not chunk:
                                raise _Gone()
                        self.buf += chunk

        def read_output(self, budget=None):
                """Reads what bash wrote (at most `budget` bytes) and sends each line
                it completes. False once the pipe is empty or closed."""
                while budget is None or budget > 0:
                        try:
                                chunk = os.read(self.out_r, 65536)
                        except BlockingIOError:
                                return False
                        if not chunk:
                                os.close(self.out_r)
                                self.out_r = -1
                                return False
                        self._lines(chunk)
                        if budget is None:
                                return True
                        budget -= len(chunk)
                return True

        def _lines(self, data):
                self.line += data
                start = 0
                for m in re.finditer(rb"[\r\n]", self.line):
                        self._emit(self.line[start:m.end()])
                        start = m.end()
                self.line = self.line[start:]
                while len(self.line) >= LINE_MAX:
                        self._emit(self.line[:LINE_MAX])
                        self.line = self.line[LINE_MAX:]

        def _emit(self, data, final=False):
                text = self.decoder.decode(data, final)
                if text and self.on_output:
                        self.on_output(text)

        def end_output(self):
                """At the cell's end (bash_kernel: its prompt is back): what is left
                in the pipe, then the unfinished line."""
                if self.out_r >= 0:
                        self.read_output(END_DRAIN_MAX)
                self._emit(self.line, final=True)
                self.line = b""

        def setenv(self, name, value):
                self.export(name, value)

        def restore(self, name, sandbox_value=None):
                """After a cell, as E2B's server does (_reset_env_vars_code): the
                sandbox-wide value back, else `unset`, whatever it was before."""
                if sandbox_value is None:
                        self._line(f"unset {name}\n")
                else:
                        self.export(name, sandbox_value)

        def export(self, name, value):
                self._line(f"export {name}={_quote(value)}\n")

        def reseed(self):
                """A copy of a snapshot (docs/SNAPSHOTS.md): $RANDOM's generator
                anew, from the kernel (bash 5.1's $SRANDOM is getrandom's)."""
                self._line("RANDOM=$SRANDOM\n")

        def stop(self):
                """bash is gone: reap it and drop its pipes."""
                for fd in (self.ctl, self.status_r, self.out_r):
                        if fd >= 0:
                                os.close(fd)
                self.ctl = self.status_r = self.out_r = -1
                self.code.close()
                self.proc.wait()


def _send(fd, mtype, req_id, body):
        """One message, after everything written to fds 1 and 2 before it has
        been read by the agent (section 8's ordering rule)."""
        _cellvm.wait_output_drained(OUTPUT_DRAIN_TIMEOUT)
        _cellvm.send(fd, mtype, req_id, body)


class BashKernel:
        def __init__(self, fd):
                self.fd = fd
                self.count = 0
                self.sandbox_envs = {}
                self.bash = Bash()
                self.bash.start()

        def _envs(self, body):
                """The names and values E2B exports before the cell, valid ones only
                (bash holds no others)."""
                envs = body.get("envs")
                if not isinstance(envs, dict):
                        return {}
                return {str(k): str(v) for k, v in envs.items() if _NAME_RE.match(str(k))}

        def _apply_sandbox_envs(self, envs):
                """Sandbox-wide envs, set once as E2B's server does at a context's first
                execution (a cell may change them); again if the client's differ."""
                if not isinstance(envs, dict):
                        return
                envs = {str(k): str(v) for k, v in envs.items() if _NAME_RE.match(str(k))}
                if envs == self.sandbox_envs:
                        return
                for k, v in envs.items():
                        self.bash.export(k, v)
                self.sandbox_envs = envs

        def execute(self, req_id, body):
                code = body.get("code", "")
                if not isinstance(code, str):
                        code = ""
                if cellvm_reseed.before_cell(body):
                        try:
                                self.bash.reseed()
                        except (BrokenPipeError, ValueError):
                                pass  # bash is gone: the cell restarts it, with a fresh seed
                self.count += 1  # every execution counts (ipykernel's Kernel base)
                status = 0
                interrupted = False
                restarted = False
                _send(self.fd, EXEC_INPUT, req_id, {"execution_count": self.count})
                self.bash.on_output = lambda text: _cellvm.send(
                        self.fd, STREAM, req_id, {"name": "stdout", "text": text})
                envs = {}
                # From EXEC_INPUT on (the agent signals only after it) an interrupt is
                # noted, and acted on once the cell runs.
                self.bash.pending = False
                signal.signal(signal.SIGINT, self.bash.on_sigint)
                try:
                        self._apply_sandbox_envs(body.get("sandbox_envs"))
                        envs = self._envs(body)
                        for k, v in envs.items():
                                self.bash.setenv(k, v)
                        if code.strip():
                                status = self.bash.run(code)
                                interrupted = status is None
                except (_Gone, BrokenPipeError):
                        restarted = True
                finally:
                        signal.signal(signal.SIGINT, signal.SIG_IGN)
                if restarted:
                        self.bash.stop()
                        os.write(1, b"Restarting Bash")
                        self.bash.start()
                        self.sandbox_envs = {}
                        self._apply_sandbox_envs(body.get("sandbox_envs"))
                        status = 0
                else:
                        try:
                                for k in envs:
                                        self.bash.restore(k, self.sandbox_envs.get(k))
                        except (BrokenPipeError, ValueError):
                                pass  # bash died after the cell: the next one restarts it
                error = None
                if interrupted:
                        error = {"name": "ExecutionAborted", "value": "Execution was aborted",
                                 "traceback": []}
                elif status:
                        error = {"name": "", "value": str(status), "traceback": []}
                if error:
                        _send(self.fd, EXEC_ERROR, req_id, error)
                _send(self.fd, X_END, req_id,
                      {"status": "error" if error else "ok", "execution_count": self.count})

        def serve(self):
                while True:
                        try:
                                msg = _cellvm.recv(self.fd)
                        except KeyboardInterrupt:
                                continue
                        if msg is None:
                                return
                        mtype, req_id, body = msg
                        if mtype != X_EXECUTE:
                                print(f"cellvm-executor: ignoring message type {mtype:#x}",
                                      file=sys.stderr)
                                continue
                        self.execute(req_id, body if isinstance(body, dict) else {})


def executor_main(fd):
        """Runs in an executor attached to its context: starts bash, X_READY, then one
        X_EXECUTE at a time until the agent closes the socket."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        kernel = BashKernel(fd)
        _cellvm.send(fd, X_READY, 0, {"pid": os.getpid()})
        try:
                kernel.serve()
        finally:
                _cellvm.flusher_stop()
