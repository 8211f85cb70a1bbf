"""Reading git's output for sandbox.git (E2B's e2b.sandbox._git.parse):
`git status --porcelain=1 -b`, `git branch --format=...`, `git remote
get-url`, and the directory `git clone URL` makes."""

import re
from typing import List, Optional, Tuple
from urllib.parse import urlsplit

from .exceptions import InvalidArgumentException
from .git_types import GitBranches, GitFileStatus, GitStatus

# A status letter of either column -> the word, the first that applies winning:
# a conflict (U) over a rename over a copy, ... (git status --porcelain=1).
_STATUS_WORDS = (("U", "conflict"), ("R", "renamed"), ("C", "copied"), ("D", "deleted"),
                 ("A", "added"), ("M", "modified"), ("T", "typechange"), ("?", "untracked"))

_DETACHED_AT = "HEAD (detached at "


def derive_repo_dir_from_url(url: str) -> Optional[str]:
    """The directory `git clone` names after an http(s) URL (its last path
    segment without `.git`); None for other URLs or one without a path."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None
    last = parts.path.rstrip("/").rpartition("/")[2]
    if not last:
        return None
    return last[:-len(".git")] if last.endswith(".git") else last


def _count_after(word: str, text: str) -> int:
    """N of "`word` N" in the branch line's "[ahead 2, behind 1]"; 0 when absent."""
    m = re.search(re.escape(word) + r"\s*(-?\d+)\s*(?:,|$)", text)
    return int(m.group(1)) if m else 0


def _branch_line(info: str) -> Tuple[Optional[str], Optional[str], int, int, bool]:
    """(branch, upstream, ahead, behind, detached) of the text after "## "."""
    bracket = info.find(" [")
    name = info if bracket < 0 else info[:bracket]
    counts = "" if bracket < 0 else info[bracket + 2:-1]
    ahead, behind = _count_after("ahead", counts), _count_after("behind", counts)
    if name.startswith(_DETACHED_AT) or "detached" in name:
        return None, None, ahead, behind, True
    name = name.replace("HEAD (no branch)", "HEAD")
    for prefix in ("No commits yet on ", "Initial commit on "):  # a branch without commits
        name = name.replace(prefix, "")
    if name.startswith("HEAD"):
        return None, None, ahead, behind, True
    if "..." in name:
        branch, upstream = name.split("...")
        return branch or None, upstream or None, ahead, behind, False
    return name or None, None, ahead, behind, False


def _file_line(line: str) -> Optional[GitFileStatus]:
    """A GitFileStatus of one file's line, None for a line too short to be one."""
    if line.startswith("?? "):
        return GitFileStatus(name=line[3:], status="untracked", index_status="?",
                             working_tree_status="?", staged=False)
    if len(line) < 3:
        return None
    index, worktree, path = line[0], line[1], line[3:]
    old, arrow, new = path.partition(" -> ")
    status = next((word for letter, word in _STATUS_WORDS if letter in (index, worktree)), "unknown")
    return GitFileStatus(name=new if arrow else path, status=status, index_status=index,
                         working_tree_status=worktree, staged=index not in (" ", "?"),
                         renamed_from=old if arrow else None)


def parse_git_status(output: str) -> GitStatus:
    """A GitStatus of `git status --porcelain=1 -b`'s output: its first line
    is the branch's ("## main...origin/main [ahead 1]"), each other a file's."""
    lines = [line.rstrip() for line in output.split("\n") if line.strip()]
    branch, upstream, ahead, behind, detached = None, None, 0, 0, False
    if lines and lines[0].startswith("## "):
        branch, upstream, ahead, behind, detached = _branch_line(lines[0][3:])
    files: List[GitFileStatus] = [f for f in map(_file_line, lines[1:]) if f is not None]
    return GitStatus(current_branch=branch, upstream=upstream, ahead=ahead, behind=behind,
                     detached=detached, file_status=files)


def parse_git_branches(output: str) -> GitBranches:
    """A GitBranches of `git branch --format=%(refname:short)<TAB>%(HEAD)`'s
    output: one branch a line, `*` after the one checked out."""
    branches: List[str] = []
    current = None
    for line in output.split("\n"):
        name, _, head = line.strip().partition("\t")
        if not name:
            continue
        branches.append(name)
        if head.split("\t")[0] == "*":
            current = name
    return GitBranches(branches=branches, current_branch=current)


def parse_remote_url(output: str, remote: str) -> str:
    """The URL `git remote get-url` printed; InvalidArgumentException when empty."""
    url = output.strip()
    if not url:
        raise InvalidArgumentException(f'Remote "{remote}" URL not found in repository.')
    return url
