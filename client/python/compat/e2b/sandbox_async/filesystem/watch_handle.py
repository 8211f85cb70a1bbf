"""e2b.sandbox_async.filesystem.watch_handle under E2B's module name."""

from cellvm.async_files import AsyncWatchHandle  # noqa: F401
from cellvm.models import FilesystemEvent, FilesystemEventType  # noqa: F401
