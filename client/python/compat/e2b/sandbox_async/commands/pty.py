"""e2b.sandbox_async.commands.pty under E2B's module name: its Pty is
cellvm's AsyncPty."""

from cellvm.async_pty import AsyncPty as Pty  # noqa: F401
