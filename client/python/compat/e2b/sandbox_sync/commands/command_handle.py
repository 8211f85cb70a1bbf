"""e2b.sandbox_sync.commands.command_handle under E2B's module name."""

from cellvm.commands import CommandHandle  # noqa: F401
from cellvm.exceptions import CommandExitException  # noqa: F401
from cellvm.models import CommandResult, PtyOutput, Stderr, Stdout  # noqa: F401
