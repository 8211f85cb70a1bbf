"""e2b.exceptions under E2B's module name: cellvm.exceptions."""

from cellvm.exceptions import *  # noqa: F401,F403
from cellvm.exceptions import (  # noqa: F401
    format_execution_timeout_error, format_request_timeout_error, format_sandbox_killed_error,
)
