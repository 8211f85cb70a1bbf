"""e2b.sandbox_sync.filesystem.filesystem under E2B's module name."""

from cellvm.files import Filesystem  # noqa: F401
from cellvm.models import EntryInfo, FileType, WriteEntry, WriteInfo  # noqa: F401
