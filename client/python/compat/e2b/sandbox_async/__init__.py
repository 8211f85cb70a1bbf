"""e2b.sandbox_async: E2B's module names for the async SDK's types programs
import from it (main, utils, paginator, commands.command,
commands.command_handle, filesystem.filesystem, filesystem.watch_handle),
from cellvm's async modules."""
