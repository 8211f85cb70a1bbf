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


_BY_CODE = {
    "timeout": TimeoutException,
    "not_found": NotFoundException,
    "bad_request": InvalidArgumentException,
    "busy": RateLimitException,
}


def from_agent_error(err):
    """Map a _wire.AgentError to the matching SandboxException."""
    if err.code == "timeout":
        return format_execution_timeout_error()
    cls = _BY_CODE.get(err.code, SandboxException)
    return cls(f"{err.code}: {err.message}" if err.message else err.code, code=err.code)
