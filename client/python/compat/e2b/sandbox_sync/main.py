"""e2b.sandbox_sync.main under E2B's module name."""

from cellvm.sandbox import Sandbox  # noqa: F401
