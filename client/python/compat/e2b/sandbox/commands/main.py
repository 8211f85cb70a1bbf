"""e2b.sandbox.commands.main under E2B's module name."""

from cellvm.models import ProcessInfo  # noqa: F401
