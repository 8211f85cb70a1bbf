"""e2b.sandbox._git.parse under E2B's module name."""

from cellvm._git_parse import derive_repo_dir_from_url, parse_git_branches, parse_git_status, parse_remote_url

__all__ = ["derive_repo_dir_from_url", "parse_git_branches", "parse_git_status", "parse_remote_url"]
