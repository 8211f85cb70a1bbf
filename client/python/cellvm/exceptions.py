"""Exceptions, named and arranged as in the e2b SDK (e2b/exceptions.py).

Every agent ERROR reaches the caller as one of these; `code` keeps the wire
error code (docs/PROTOCOL.md section 3) for callers that want it.
"""


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


class AuthenticationException(Exception):
    """Kept for E2B compatibility; a local agent does not authenticate."""


class TemplateException(SandboxException):
    """Kept for E2B compatibility; cellvm has no templates."""


class RateLimitException(SandboxException):
    """The agent cannot take the request now (wire code `busy`)."""


def format_execution_timeout_error():
    return TimeoutException(
        "Execution timed out — the 'timeout' option can be used to increase this timeout",
        code="timeout",
    )


def format_request_timeout_error():
    return TimeoutException(
        "Request timed out — the 'request_timeout' option can be used to increase this timeout",
        code="request_timeout",
    )


class CommandExitException(SandboxException):
    """A command exited with a non-zero code (E2B's CommandExitException): it
    carries the CommandResult fields."""

    def __init__(self, stderr="", stdout="", exit_code=0, error=None):
        super().__init__(f"Command exited with code {exit_code} and error:\n{stderr}")
        self.stderr = stderr
        self.stdout = stdout
        self.exit_code = exit_code
        self.error = error

    def __str__(self):
        return f"Command exited with code {self.exit_code} and error:\n{self.stderr}"


def format_long_request_timeout_error(detail="context deadline exceeded"):
    """E2B's wording when a command or watch runs past its `timeout`."""
    return TimeoutException(
        f"{detail}: This error is likely due to exceeding 'timeout' — the total time a long "
        "running request (like process or directory watch) can be active. It can be modified "
        "by passing 'timeout' when making the request. Use '0' to disable the timeout.",
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


def from_agent_error(err):
    """Map a _wire.AgentError to the matching SandboxException."""
    if err.code == "timeout":
        return format_execution_timeout_error()
    cls = _BY_CODE.get(err.code, SandboxException)
    return cls(f"{err.code}: {err.message}" if err.message else err.code, code=err.code)
