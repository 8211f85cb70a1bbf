"""cellvm: run Python in a cellvm micro-VM, with the e2b_code_interpreter API.

    from cellvm import Sandbox          # instead of: from e2b_code_interpreter import Sandbox
    with Sandbox.connect("unix:/run/cellvm/agent.sock") as sbx:
        print(sbx.run_code("1 + 1").text)

See docs/SDK.md for what matches E2B and what differs.
"""

from .boot import BootReport
from .exceptions import (
    AuthenticationException,
    InvalidArgumentException,
    NotEnoughSpaceException,
    NotFoundException,
    RateLimitException,
    SandboxException,
    TemplateException,
    TimeoutException,
)
from .models import (
    Context,
    Execution,
    ExecutionError,
    Logs,
    MIMEType,
    OutputHandler,
    OutputMessage,
    Result,
)
from .sandbox import Sandbox

__all__ = [
    "AuthenticationException",
    "BootReport",
    "Context",
    "Execution",
    "ExecutionError",
    "InvalidArgumentException",
    "Logs",
    "MIMEType",
    "NotEnoughSpaceException",
    "NotFoundException",
    "OutputHandler",
    "OutputMessage",
    "RateLimitException",
    "Result",
    "Sandbox",
    "SandboxException",
    "TemplateException",
    "TimeoutException",
]
