"""e2b.sandbox_async.paginator under E2B's module name."""

from cellvm.async_sandbox import AsyncSandboxPaginator  # noqa: F401
from cellvm.snapshots import AsyncSnapshotPaginator  # noqa: F401
