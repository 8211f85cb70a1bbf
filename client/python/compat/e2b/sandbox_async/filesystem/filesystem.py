"""e2b.sandbox_async.filesystem.filesystem under E2B's module name: its
Filesystem is cellvm's AsyncFilesystem."""

from cellvm.async_files import AsyncFilesystem as Filesystem  # noqa: F401
from cellvm.models import EntryInfo, FileType, WriteEntry, WriteInfo  # noqa: F401
