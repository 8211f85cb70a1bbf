"""The command lines sandbox.git runs (E2B's e2b.sandbox._git.args and
.config): git's arguments for each operation, checked the way E2B checks
them (InvalidArgumentException with E2B's messages), and the shell text
that runs them with every word single-quoted."""

from typing import List, Optional, Tuple

from ._git_auth import strip_credentials, with_credentials
from ._git_parse import derive_repo_dir_from_url
from .exceptions import InvalidArgumentException
from .git_types import ClonePlan

_RESET_MODES = ("soft", "mixed", "hard", "merge", "keep")


def shell_escape(value: str) -> str:
    """`value` as one shell word: always single-quoted, a `'` inside as `'"'"'`."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


def build_git_command(args: List[str], repo_path: Optional[str] = None) -> str:
    """`git [-C repo_path] args...` as shell text."""
    words = ["git"] + (["-C", repo_path] if repo_path else []) + list(args)
    return " ".join(map(shell_escape, words))


def build_push_args(remote_name: Optional[str], *, remote: Optional[str], branch: Optional[str],
                    set_upstream: bool) -> List[str]:
    """`push [--set-upstream] [REMOTE] [BRANCH]`; the remote is the one
    resolved for credentials (remote_name), else `remote`."""
    target = remote_name or remote
    upstream = ["--set-upstream"] if set_upstream and target else []
    return ["push"] + upstream + [w for w in (target, branch) if w]


def build_pull_args(remote: Optional[str], branch: Optional[str],
                    remote_name: Optional[str] = None) -> List[str]:
    """`pull [REMOTE] [BRANCH]`, the remote chosen as in build_push_args."""
    return ["pull"] + [w for w in (remote_name or remote, branch) if w]


def build_remote_add_args(name: str, url: str, fetch: bool) -> List[str]:
    if not name or not url:
        raise InvalidArgumentException("Both remote name and URL are required to add a git remote.")
    return ["remote", "add"] + (["-f"] if fetch else []) + [name, url]


def build_remote_add_shell_command(args: List[str], path: str, name: str, url: str, fetch: bool) -> str:
    """`remote add`, or `remote set-url` when the remote exists; then a
    fetch of it when asked."""
    add_or_set = "%s || %s" % (build_git_command(args, path),
                               build_git_command(build_remote_set_url_args(name, url), path))
    if not fetch:
        return add_or_set
    return "(%s) && %s" % (add_or_set, build_git_command(["fetch", name], path))


def build_remote_get_url_args(name: str) -> List[str]:
    return ["remote", "get-url", name]


def build_remote_set_url_args(name: str, url: str) -> List[str]:
    return ["remote", "set-url", name, url]


def build_remote_get_command(path: str, name: str) -> str:
    """`remote get-url NAME`, succeeding with no output when there is no such remote."""
    if not name:
        raise InvalidArgumentException("Remote name is required.")
    return build_git_command(build_remote_get_url_args(name), path) + " || true"


def build_credential_approve_command(username: str, password: str, host: str, protocol: str) -> str:
    """`git credential approve` fed the credential on its stdin (never on a
    command line of its own); host defaults to github.com, protocol to https."""
    fields = [("protocol", protocol.strip() or "https"), ("host", host.strip() or "github.com"),
              ("username", username), ("password", password)]
    text = "".join("%s=%s\n" % f for f in fields) + "\n"
    return "printf %%s %s | %s" % (shell_escape(text), build_git_command(["credential", "approve"]))


def build_has_upstream_args() -> List[str]:
    return ["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"]


def build_status_args() -> List[str]:
    return ["status", "--porcelain=1", "-b"]


def build_branches_args() -> List[str]:
    return ["branch", "--format=%(refname:short)\t%(HEAD)"]


def build_create_branch_args(branch: str) -> List[str]:
    return ["checkout", "-b", branch]


def build_checkout_branch_args(branch: str) -> List[str]:
    return ["checkout", branch]


def build_delete_branch_args(branch: str, force: bool) -> List[str]:
    return ["branch", "-D" if force else "-d", branch]


def build_add_args(files: Optional[List[str]], all: bool) -> List[str]:
    """`add -- FILES...`; without files `add -A` (all) or `add .`."""
    if files:
        return ["add", "--"] + list(files)
    return ["add", "-A" if all else "."]


def build_commit_args(message: str, author_name: Optional[str], author_email: Optional[str],
                      allow_empty: bool) -> List[str]:
    """`[-c user.name=...] [-c user.email=...] commit -m MESSAGE [--allow-empty]`:
    the author given for this commit only."""
    author: List[str] = []
    if author_name:
        author += ["-c", "user.name=" + author_name]
    if author_email:
        author += ["-c", "user.email=" + author_email]
    return author + ["commit", "-m", message] + (["--allow-empty"] if allow_empty else [])


def build_reset_args(mode: Optional[str], target: Optional[str], paths: Optional[List[str]]) -> List[str]:
    """`reset [--MODE] [TARGET] [-- PATHS...]`."""
    if mode and mode not in _RESET_MODES:
        raise InvalidArgumentException("Reset mode must be one of %s." % ", ".join(_RESET_MODES))
    args = ["reset"] + (["--" + mode] if mode else []) + ([target] if target else [])
    return args + (["--"] + list(paths) if paths else [])


def build_restore_args(paths: List[str], staged: Optional[bool], worktree: Optional[bool],
                       source: Optional[str]) -> List[str]:
    """`restore [--worktree] [--staged] [--source SOURCE] -- PATHS...`. Left
    unsaid, worktree is restored unless only `staged=True` is asked, and the
    index only when asked."""
    if not paths:
        raise InvalidArgumentException("At least one path is required.")
    if staged is None and worktree is None:
        worktree = True
    elif staged is True and worktree is None:
        worktree = False
    elif staged is None:
        staged = False
    if staged is False and worktree is False:
        raise InvalidArgumentException("At least one of staged or worktree must be true.")
    args = ["restore"] + (["--worktree"] if worktree else []) + (["--staged"] if staged else [])
    return args + (["--source", source] if source else []) + ["--"] + list(paths)


def build_clone_plan(url: str, path: Optional[str], branch: Optional[str], depth: Optional[int],
                     auth_username: Optional[str], auth_password: Optional[str],
                     dangerously_store_credentials: bool) -> ClonePlan:
    """`clone URL [--branch B --single-branch] [--depth N] [PATH]`, the
    credentials in the URL; unless they are to be stored, the clone's origin
    is set to the URL without them afterwards, so its directory must be
    known (given, or derived from an http(s) URL)."""
    clone_url = with_credentials(url, auth_username, auth_password) \
        if auth_username and auth_password else url
    bare_url = strip_credentials(clone_url)
    strip = not dangerously_store_credentials and bare_url != clone_url
    repo_path = (path or derive_repo_dir_from_url(url)) if strip else path
    if strip and not repo_path:
        raise InvalidArgumentException(
            "A destination path is required when using credentials without storing them.")
    args = ["clone", clone_url]
    if branch:
        args += ["--branch", branch, "--single-branch"]
    if depth:
        args += ["--depth", str(depth)]
    if path:
        args.append(path)
    return ClonePlan(args=args, repo_path=repo_path, sanitized_url=bare_url if strip else None,
                     should_strip=strip)


def resolve_config_scope(scope: Optional[str], path: Optional[str]) -> Tuple[str, Optional[str]]:
    """(git config's scope flag, the repository to run it in): `--global`
    (the default) and `--system` run anywhere, `--local` needs `path`."""
    name = (scope or "global").strip().lower()
    if name not in ("global", "local", "system"):
        raise InvalidArgumentException("Git config scope must be one of: global, local, system.")
    if name != "local":
        return "--" + name, None
    if not path:
        raise InvalidArgumentException("Repository path is required when scope is local.")
    return "--local", path
