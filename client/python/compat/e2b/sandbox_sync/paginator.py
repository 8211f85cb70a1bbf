"""e2b.sandbox_sync.paginator under E2B's module name."""

from cellvm.sandbox import SandboxPaginator  # noqa: F401
from cellvm.snapshots import SnapshotPaginator  # noqa: F401
