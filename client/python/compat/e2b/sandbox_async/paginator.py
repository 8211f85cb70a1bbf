"""e2b.sandbox_async.paginator under E2B's module name."""

from cellvm.async_sandbox import AsyncSandboxPaginator  # noqa: F401
