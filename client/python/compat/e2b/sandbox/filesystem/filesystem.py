"""e2b.sandbox.filesystem.filesystem under E2B's module name."""

from cellvm.models import EntryInfo, FileType, WriteEntry, WriteInfo  # noqa: F401
