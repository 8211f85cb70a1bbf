"""e2b.sandbox.filesystem.watch_handle under E2B's module name."""

from cellvm.models import FilesystemEvent, FilesystemEventType  # noqa: F401
