"""The values sandbox.git returns (E2B's e2b.sandbox._git.types): a
repository's status, its branches, and the plan of a clone."""

from dataclasses import dataclass
from typing import List, Literal, Optional

GitResetMode = Literal["soft", "mixed", "hard", "merge", "keep"]
"""The modes of git.reset()."""


@dataclass
class GitFileStatus:
    """One line of `git status --porcelain=1`: `name` relative to the
    repository's root, `status` a word ("modified", "added", "deleted",
    "renamed", "copied", "typechange", "untracked", "conflict", "unknown"),
    the two status letters as git prints them, whether the index has the
    change, and the old name of a rename or copy."""

    name: str
    status: str
    index_status: str
    working_tree_status: str
    staged: bool
    renamed_from: Optional[str] = None


@dataclass
class GitStatus:
    """`git status`: the branch, its upstream and how far apart they are,
    whether HEAD is detached, and the changed files."""

    current_branch: Optional[str]
    upstream: Optional[str]
    ahead: int
    behind: int
    detached: bool
    file_status: List[GitFileStatus]

    def _count(self, test) -> int:
        return sum(1 for entry in self.file_status if test(entry))

    @property
    def is_clean(self) -> bool:
        """No changed, staged or untracked file."""
        return not self.file_status

    @property
    def has_changes(self) -> bool:
        return bool(self.file_status)

    @property
    def has_staged(self) -> bool:
        return self.staged_count > 0

    @property
    def has_untracked(self) -> bool:
        return self.untracked_count > 0

    @property
    def has_conflicts(self) -> bool:
        return self.conflict_count > 0

    @property
    def total_count(self) -> int:
        return len(self.file_status)

    @property
    def staged_count(self) -> int:
        return self._count(lambda e: e.staged)

    @property
    def unstaged_count(self) -> int:
        """Files whose change is not in the index (untracked ones included)."""
        return self._count(lambda e: not e.staged)

    @property
    def untracked_count(self) -> int:
        return self._count(lambda e: e.status == "untracked")

    @property
    def conflict_count(self) -> int:
        return self._count(lambda e: e.status == "conflict")


@dataclass
class GitBranches:
    """The local branches, and the one checked out (None when HEAD is detached)."""

    branches: List[str]
    current_branch: Optional[str]


@dataclass
class ClonePlan:
    """What git.clone() runs: `args` of `git clone`; when credentials were
    put in the URL and must not stay in the clone's config, `should_strip`,
    the clone's directory (`repo_path`) and the URL without them
    (`sanitized_url`) to set as origin's afterwards."""

    args: List[str]
    repo_path: Optional[str]
    sanitized_url: Optional[str]
    should_strip: bool
