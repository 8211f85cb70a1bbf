"""e2b.sandbox._git.types under E2B's module name."""

from cellvm.git_types import ClonePlan, GitBranches, GitFileStatus, GitResetMode, GitStatus

__all__ = ["ClonePlan", "GitBranches", "GitFileStatus", "GitResetMode", "GitStatus"]
