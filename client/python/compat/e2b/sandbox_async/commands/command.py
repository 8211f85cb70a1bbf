"""e2b.sandbox_async.commands.command under E2B's module name: its Commands
is cellvm's AsyncCommands."""

from cellvm.async_commands import AsyncCommands as Commands  # noqa: F401
