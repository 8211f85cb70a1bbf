"""e2b.sandbox_sync.filesystem.watch_handle under E2B's module name."""

from cellvm.files import WatchHandle  # noqa: F401
from cellvm.models import FilesystemEvent, FilesystemEventType  # noqa: F401
