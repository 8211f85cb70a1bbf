"""sandbox.pty: E2B's Pty API (create, connect, send_stdin, resize, kill) over
the commands service's pseudo-terminals (docs/PROTOCOL.md section 10, CMD_START
with `pty`, CMD_RESIZE)."""

from typing import Dict, Optional, Union

from .commands import CMD_RESIZE, CommandHandle, Commands
from .models import PtySize

SHELL = ["/bin/bash", "-i", "-l"]
"""What E2B's pty.create runs: an interactive login shell."""


class Pty:
    """E2B's sandbox.pty. A terminal is a command: its handle is a
    CommandHandle whose output comes as bytes, to wait(on_pty=...) or as the
    third item when iterating; it outlives this client, as in E2B."""

    def __init__(self, sandbox):
        self._sbx = sandbox
        self._cmds = Commands(sandbox)

    def create(self, size: PtySize, user: Optional[str] = None, cwd: Optional[str] = None,
               envs: Optional[Dict[str, str]] = None, timeout: Optional[float] = 60,
               request_timeout: Optional[float] = None) -> CommandHandle:
        """Start `/bin/bash -i -l` on a new terminal of `size`, with TERM,
        LANG and LC_ALL as E2B sets them unless `envs` does. `timeout` seconds
        (0 or None: none) kills it."""
        envs = dict(envs) if envs else {}
        envs.setdefault("TERM", "xterm-256color")
        envs.setdefault("LANG", "C.UTF-8")
        envs.setdefault("LC_ALL", "C.UTF-8")
        return self._cmds._start(None, True, envs, user, cwd, None, timeout, request_timeout,
                                 argv=list(SHELL), pty=_size(size))

    def connect(self, pid: int, timeout: Optional[float] = 60,
                request_timeout: Optional[float] = None) -> CommandHandle:
        """Follow a running terminal again, from now on (commands.connect)."""
        return self._cmds.connect(pid, timeout, request_timeout)

    def send_stdin(self, pid: int, data: Union[bytes, str],
                   request_timeout: Optional[float] = None) -> None:
        """Type `data` into the terminal (^C is b"\\x03", ^D b"\\x04")."""
        self._cmds.send_stdin(pid, data, request_timeout)

    def resize(self, pid: int, size: PtySize, request_timeout: Optional[float] = None) -> None:
        """Set the terminal's size; its foreground job gets SIGWINCH."""
        self._sbx._call(CMD_RESIZE, {"pid": int(pid), "pty": _size(size)}, request_timeout,
                        rpc=True)

    def kill(self, pid: int, request_timeout: Optional[float] = None) -> bool:
        """SIGKILL the terminal's shell; False if there is no such process."""
        return self._cmds.kill(pid, request_timeout)


def _size(size: PtySize) -> Dict[str, int]:
    return {"cols": int(size.cols), "rows": int(size.rows)}
