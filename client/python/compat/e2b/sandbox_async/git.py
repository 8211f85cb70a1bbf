"""e2b.sandbox_async.git under E2B's module name: its Git is cellvm's AsyncGit."""

from cellvm.async_git import AsyncGit as Git
from cellvm.git import DEFAULT_GIT_ENV

__all__ = ["DEFAULT_GIT_ENV", "Git"]
