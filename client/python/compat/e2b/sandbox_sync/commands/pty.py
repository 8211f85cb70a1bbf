"""e2b.sandbox_sync.commands.pty under E2B's module name."""

from cellvm.pty import Pty  # noqa: F401
