"""e2b.sandbox_async.main under E2B's module name."""

from cellvm.async_sandbox import AsyncSandbox  # noqa: F401
