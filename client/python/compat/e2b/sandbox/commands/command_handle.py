"""e2b.sandbox.commands.command_handle under E2B's module name."""

from cellvm.exceptions import CommandExitException  # noqa: F401
from cellvm.models import CommandResult, PtyOutput, PtySize, Stderr, Stdout  # noqa: F401
