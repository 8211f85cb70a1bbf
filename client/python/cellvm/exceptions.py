"""Exceptions, named and arranged as in the e2b SDK (e2b/exceptions.py).

Every agent ERROR reaches the caller as one of these; `code` keeps the wire
error code (docs/PROTOCOL.md section 3) for callers that want it.
"""

import re as _re

from .models import CommandResult


class SandboxException(Exception):
    """Base class for all sandbox errors."""

    def __init__(self, message="", code=None):
        super().__init__(message)
        self.code = code


class TimeoutException(SandboxException):
    """An execution ran past its `timeout`, or a request past `request_timeout`."""


class InvalidArgumentException(SandboxException):
    """An argument the SDK or the agent cannot accept."""


class NotEnoughSpaceException(SandboxException):
    """Not enough disk space (kept for E2B compatibility)."""


class NotFoundException(SandboxException):
    """The context (or another resource) does not exist."""


class FileNotFoundException(NotFoundException):
    """A file or directory does not exist in the sandbox (E2B 2.x raises it
    from sandbox.files where it used to raise NotFoundException)."""


class SandboxNotFoundException(NotFoundException):
    """No sandbox answers at that id: nothing listens at the address, or
    this process killed it."""


class AuthenticationException(Exception):
    """Kept for E2B compatibility; a local agent does not authenticate."""


class GitAuthException(AuthenticationException):
    """Kept for E2B compatibility (E2B's git module)."""


class GitUpstreamException(SandboxException):
    """Kept for E2B compatibility (E2B's git module)."""


class TemplateException(SandboxException):
    """Kept for E2B compatibility; cellvm has no templates."""


class RateLimitException(SandboxException):
    """The agent cannot take the request now (wire code `busy`)."""

    def __init__(self, message="", code=None, retry_after=None):
        super().__init__(message, code)
        self.retry_after = retry_after
        """Seconds to wait before retrying (E2B's field); None: unknown."""


class VolumeException(Exception):
    """E2B's volume errors (its cloud volumes; cellvm raises none), so that
    a program's `except VolumeException` still imports."""


class VolumeNotFoundException(NotFoundException):
    """E2B's: a volume that does not exist."""


class VolumePathNotFoundException(NotFoundException):
    """E2B's: a path that does not exist in a volume."""


class SecretException(Exception):
    """E2B's secret-store errors (its cloud secrets; cellvm raises none)."""


class SecretNotFoundException(SecretException):
    """E2B's: a secret that does not exist."""


class BuildException(Exception):
    """Kept for E2B compatibility (template builds; cellvm builds images with make)."""


class FileUploadException(BuildException):
    """Kept for E2B compatibility (template builds)."""


def format_execution_timeout_error():
    return TimeoutException(
        "Execution timed out — the 'timeout' option can be used to increase this timeout",
        code="timeout",
    )


def format_sandbox_killed_error():
    """E2B's error for a request in flight when the sandbox is killed."""
    return TimeoutException(
        "The sandbox was killed while the request was in progress. This can happen when the "
        "sandbox times out or is killed manually. You can modify the sandbox timeout by passing "
        "'timeout' when starting the sandbox or calling '.set_timeout' on the sandbox with the "
        "desired timeout",
        code="killed",
    )


def format_sandbox_terminated_error(cause: str = "connection to the sandbox closed"):
    """E2B's (e2b.envd.rpc.format_terminated_exception): a command, pty or
    file request in flight when the sandbox is killed or its lifetime ends."""
    return TimeoutException(
        f"{cause}: The sandbox was killed or reached its end of life while the request was in flight.")


def format_sandbox_timeout_exception(message: str):
    """E2B's error when a request fails because the sandbox's lifetime ended."""
    return TimeoutException(
        f"{message}: This error is likely due to sandbox timeout. You can modify the sandbox timeout "
        "by passing 'timeout' when starting the sandbox or calling '.set_timeout' on the sandbox "
        "with the desired timeout.",
        code="timeout",
    )


SANDBOX_NOT_FOUND_MESSAGE = "The sandbox was not found"
"""The message of E2B's edge for a request to a sandbox that is not running
(infra packages/shared/pkg/proxy/template/sandbox_not_found.go, a 502)."""


def format_sandbox_not_running_error(sandbox_id: str, code_interpreter: bool = False):
    """What E2B's SDK raises for a request to a sandbox that has ended (timed
    out or killed): its edge answers 502 {"sandboxId": id, "message": "The
    sandbox was not found", "code": 502}, which becomes
    format_sandbox_timeout_exception of the message for envd's calls (files:
    e2b/envd/api.py, 502; commands and the files service's RPCs:
    e2b/envd/rpc.py, UNAVAILABLE) and of the whole body for the code
    interpreter's (run_code, contexts: e2b_code_interpreter/models.py
    format_exception)."""
    if not code_interpreter:
        return format_sandbox_timeout_exception(SANDBOX_NOT_FOUND_MESSAGE)
    import json
    body = json.dumps({"sandboxId": sandbox_id, "message": SANDBOX_NOT_FOUND_MESSAGE, "code": 502},
                      separators=(",", ":"))
    return format_sandbox_timeout_exception(body)


def format_request_timeout_error():
    return TimeoutException(
        "Request timed out — the 'request_timeout' option can be used to increase this timeout",
        code="request_timeout",
    )


class CommandExitException(SandboxException, CommandResult):
    """A command exited with a non-zero code (E2B's CommandExitException). As
    in E2B it is also a CommandResult: stderr, stdout, exit_code, error."""

    def __init__(self, stderr="", stdout="", exit_code=0, error=None):
        SandboxException.__init__(self, f"Command exited with code {exit_code} and error:\n{stderr}")
        self.stderr = stderr
        self.stdout = stdout
        self.exit_code = exit_code
        self.error = error

    __hash__ = SandboxException.__hash__  # CommandResult's __eq__ would drop it
    __repr__ = CommandResult.__repr__

    def __str__(self):
        return f"Command exited with code {self.exit_code} and error:\n{self.stderr}"


def format_long_request_timeout_error(detail="Request timed out"):
    """E2B's Python SDK's error when a command or watch runs past its
    `timeout` (e2b/envd/rpc.py, DEADLINE_EXCEEDED; connectrpc's client
    deadline says "Request timed out")."""
    return TimeoutException(
        f"{detail}: This error is likely due to exceeding 'timeout' — the total time a long "
        "running request (like process or directory watch) can be active — or "
        "'request_timeout'. You can modify these by passing 'timeout' or 'request_timeout' "
        "when making the request. Use '0' to disable the timeout.",
        code="timeout",
    )


_BY_CODE = {
    "timeout": TimeoutException,
    "not_found": NotFoundException,
    "bad_request": InvalidArgumentException,
    "invalid_argument": InvalidArgumentException,
    "no_space": NotEnoughSpaceException,
    "busy": RateLimitException,
}


# The agent's file errors read "<op> <absolute path>: <strerror> (<ENAME>)"
# (agent/svc.c svc_send_errno).
_FILE_ERROR = _re.compile(r"^(read|write|stat|list|rename|make_dir) (/.*): [^:]* \((E[A-Z0-9]+)\)$", _re.S)

# What E2B raises for these, with envd's message (the SDK passes envd's
# message through: e2b/sandbox_sync/filesystem/filesystem.py,
# e2b/envd/api.py format_envd_api_exception, e2b/envd/rpc.py).
_E2B_FILE_MESSAGES = {
    # envd internal/api/download.go GetFiles: 404, 400
    ("read", "ENOENT"): "path '{path}' does not exist",
    ("read", "EISDIR"): "path '{path}' is a directory",
    # envd api/upload.go processFile (a 400)
    ("write", "EISDIR"): "path is a directory: {path}",
    # envd services/filesystem/utils.go entryInfo (os.Lstat's error)
    ("stat", "ENOENT"): "file not found: lstat {path}: no such file or directory",
    # envd services/filesystem/dir.go ListDir (filepath.EvalSymlinks' error; not a directory)
    ("list", "ENOENT"): "path not found: lstat {path}: no such file or directory",
    ("list", "ENOTDIR"): "path is not a directory: {path}",
    # envd services/filesystem/move.go Move (os.Rename's error names both paths)
    ("rename", "ENOENT"): "source file not found: rename {path}: no such file or directory",
    # envd services/filesystem/dir.go MakeDir
    ("make_dir", "EEXIST"): "path already exists but it is not a directory: {path}",
}


def _e2b_file_message(err):
    """E2B's message for a files-service error it words itself, else None."""
    m = _FILE_ERROR.match(err.message or "")
    if not m:
        return None
    text = _E2B_FILE_MESSAGES.get((m.group(1), m.group(3)))
    return text.format(path=m.group(2)) if text else None


def from_agent_error(err, not_found=None):
    """Map a _wire.AgentError to the matching SandboxException; `not_found`
    replaces NotFoundException (the files service raises FileNotFoundException,
    with E2B's wording where E2B has one)."""
    if err.code == "timeout":
        return format_execution_timeout_error()
    cls = _BY_CODE.get(err.code, SandboxException)
    if cls is NotFoundException and not_found is not None:
        cls = not_found
    if not_found is FileNotFoundException:
        e2b_text = _e2b_file_message(err)
        if e2b_text is not None:
            return cls(e2b_text, code=err.code)
    # E2B's SDK (e2b/envd/rpc.py handle_rpc_exception) raises an invalid
    # argument or a not-found with envd's message alone, others after their code.
    if err.message and err.code in ("invalid_argument", "not_found"):
        return cls(err.message, code=err.code)
    return cls(f"{err.code}: {err.message}" if err.message else err.code, code=err.code)
