"""e2b.sandbox_sync.commands.command under E2B's module name."""

from cellvm.commands import Commands  # noqa: F401
