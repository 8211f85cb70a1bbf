"""e2b_code_interpreter.models under E2B's module name: cellvm.models."""

from cellvm.models import *  # noqa: F401,F403
from cellvm.models import (  # noqa: F401
    Context, Execution, ExecutionError, Logs, MIMEType, OutputHandler, OutputHandlerWithAsync,
    OutputMessage, Result, RunCodeLanguage, serialize_results,
)
