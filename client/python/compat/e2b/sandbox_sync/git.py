"""e2b.sandbox_sync.git under E2B's module name."""

from cellvm.git import DEFAULT_GIT_ENV, Git

__all__ = ["DEFAULT_GIT_ENV", "Git"]
