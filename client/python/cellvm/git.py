"""sandbox.git: E2B's Git API (e2b/sandbox_sync/git.py) by running git in
the sandbox through sandbox.commands. Each call is one or a few `git`
command lines (cellvm._git_args); a failed one raises the command's
CommandExitException, or GitAuthException / GitUpstreamException when
git's output says why (cellvm._git_auth), as E2B's does."""

from typing import Callable, Dict, List, NamedTuple, Optional

from ._git_args import (build_add_args, build_branches_args, build_checkout_branch_args, build_clone_plan,
                        build_commit_args, build_create_branch_args, build_credential_approve_command,
                        build_delete_branch_args, build_git_command, build_has_upstream_args,
                        build_pull_args, build_push_args, build_remote_add_args,
                        build_remote_add_shell_command, build_remote_get_command,
                        build_remote_get_url_args, build_remote_set_url_args, build_reset_args,
                        build_restore_args, build_status_args, resolve_config_scope)
from ._git_auth import (build_auth_error_message, build_upstream_error_message, is_auth_failure,
                        is_missing_upstream, with_credentials)
from ._git_parse import parse_git_branches, parse_git_status, parse_remote_url
from .commands import Commands
from .exceptions import CommandExitException, GitAuthException, GitUpstreamException, InvalidArgumentException
from .git_types import GitBranches, GitResetMode, GitStatus
from .models import CommandResult

DEFAULT_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0"}
"""Set for every git command: git fails instead of waiting for a password
nobody can type (that failure is what GitAuthException reports)."""


class _Call(NamedTuple):
    """The options of one Git call, the same for each command it runs."""
    envs: Optional[Dict[str, str]]
    user: Optional[str]
    cwd: Optional[str]
    timeout: Optional[float]
    request_timeout: Optional[float]


def _password_needs_username(action: str, username: Optional[str], password: Optional[str]) -> None:
    if password and not username:
        raise InvalidArgumentException(f"Username is required when using a password or token for git {action}.")


def _raise_explained(action: str, err: CommandExitException, username: Optional[str],
                     password: Optional[str], upstream: bool = True) -> None:
    """Raises GitAuthException or GitUpstreamException from `err` when git's
    output says which; returns otherwise."""
    if is_auth_failure(err):
        raise GitAuthException(build_auth_error_message(action, bool(username) and not password)) from err
    if upstream and is_missing_upstream(err):
        raise GitUpstreamException(build_upstream_error_message(action)) from err


class Git:
    """E2B's sandbox.git: clone, init, remotes, status, branches, add,
    commit, reset, restore, push, pull and git config, in the sandbox.
    Every method takes the options of commands.run (envs, user, cwd,
    timeout, request_timeout) and passes them to each command it runs;
    `timeout=None` leaves a clone or push unlimited."""

    def __init__(self, commands: Commands) -> None:
        self._commands = commands

    def _shell(self, cmd: str, call: _Call) -> CommandResult:
        envs = {**DEFAULT_GIT_ENV, **(call.envs or {})}
        return self._commands.run(cmd, envs=envs, user=call.user, cwd=call.cwd, timeout=call.timeout,
                                  request_timeout=call.request_timeout)

    def _git(self, args: List[str], repo_path: Optional[str], call: _Call) -> CommandResult:
        return self._shell(build_git_command(args, repo_path), call)

    def _has_upstream(self, path: str, call: _Call) -> bool:
        try:
            return bool(self._git(build_has_upstream_args(), path, call).stdout.strip())
        except Exception:  # no upstream makes rev-parse fail; any failure means "none known"
            return False

    def _resolve_remote_name(self, path: str, remote: Optional[str], call: _Call) -> str:
        """`remote`, else the repository's only remote."""
        if remote:
            return remote
        names = self._git(["remote"], path, call).stdout.split()
        if len(names) != 1:
            raise InvalidArgumentException(
                "Remote is required when using username/password and the repository has multiple remotes.")
        return names[0]

    def _with_remote_credentials(self, path: str, remote: str, username: str, password: str, call: _Call,
                                 operation: Callable[[], CommandResult]) -> CommandResult:
        """operation() with the credentials in `remote`'s URL, and the URL put
        back afterwards whatever happened: they must not stay in .git/config."""
        original = parse_remote_url(self._git(build_remote_get_url_args(remote), path, call).stdout, remote)
        with_them = with_credentials(original, username, password)
        self._git(build_remote_set_url_args(remote, with_them), path, call)
        try:
            result = operation()
        except BaseException:
            try:
                self._git(build_remote_set_url_args(remote, original), path, call)
            except Exception:
                pass  # the operation's error is the one to report
            raise
        self._git(build_remote_set_url_args(remote, original), path, call)
        return result

    def clone(self, url: str, path: Optional[str] = None, branch: Optional[str] = None,
              depth: Optional[int] = None, username: Optional[str] = None, password: Optional[str] = None,
              envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
              timeout: Optional[float] = None, request_timeout: Optional[float] = None,
              dangerously_store_credentials: bool = False) -> CommandResult:
        """git clone `url` (into `path`, else git's directory for it), one
        `branch` only, `depth` commits deep. username/password (a token) go
        into the URL for the clone and, unless dangerously_store_credentials,
        out of the clone's origin afterwards. GitAuthException when the
        server wants (other) credentials."""
        _password_needs_username("clone", username, password)
        call = _Call(envs, user, cwd, timeout, request_timeout)
        plan = build_clone_plan(url, path, branch, depth, username, password, dangerously_store_credentials)
        try:
            result = self._git(plan.args, None, call)
            if plan.should_strip and plan.repo_path and plan.sanitized_url:
                self._git(build_remote_set_url_args("origin", plan.sanitized_url), plan.repo_path, call)
        except CommandExitException as err:
            _raise_explained("clone", err, username, password, upstream=False)
            raise
        return result

    def init(self, path: str, bare: bool = False, initial_branch: Optional[str] = None,
             envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
             timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> CommandResult:
        """git init `path` (a bare repository when `bare`), its first branch
        named `initial_branch` when given."""
        args = ["init"] + (["--initial-branch", initial_branch] if initial_branch else [])
        args += (["--bare"] if bare else []) + [path]
        return self._git(args, None, _Call(envs, user, cwd, timeout, request_timeout))

    def remote_add(self, path: str, name: str, url: str, fetch: bool = False, overwrite: bool = False,
                   envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
                   timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> CommandResult:
        """Add remote `name` at `url` (fetching it when `fetch`); with
        `overwrite`, an existing `name` gets the new URL instead of an error."""
        call = _Call(envs, user, cwd, timeout, request_timeout)
        args = build_remote_add_args(name, url, fetch)
        if not overwrite:
            return self._git(args, path, call)
        return self._shell(build_remote_add_shell_command(args, path, name, url, fetch), call)

    def remote_get(self, path: str, name: str, envs: Optional[Dict[str, str]] = None,
                   user: Optional[str] = None, cwd: Optional[str] = None, timeout: Optional[float] = None,
                   request_timeout: Optional[float] = None) -> Optional[str]:
        """The URL of remote `name`, None when there is no such remote."""
        cmd = build_remote_get_command(path, name)
        return self._shell(cmd, _Call(envs, user, cwd, timeout, request_timeout)).stdout.strip() or None

    def status(self, path: str, envs: Optional[Dict[str, str]] = None, user: Optional[str] = None,
               cwd: Optional[str] = None, timeout: Optional[float] = None,
               request_timeout: Optional[float] = None) -> GitStatus:
        """The repository's branch, upstream, ahead/behind and changed files."""
        result = self._git(build_status_args(), path, _Call(envs, user, cwd, timeout, request_timeout))
        return parse_git_status(result.stdout)

    def branches(self, path: str, envs: Optional[Dict[str, str]] = None, user: Optional[str] = None,
                 cwd: Optional[str] = None, timeout: Optional[float] = None,
                 request_timeout: Optional[float] = None) -> GitBranches:
        """The local branches and the one checked out."""
        result = self._git(build_branches_args(), path, _Call(envs, user, cwd, timeout, request_timeout))
        return parse_git_branches(result.stdout)

    def create_branch(self, path: str, branch: str, envs: Optional[Dict[str, str]] = None,
                      user: Optional[str] = None, cwd: Optional[str] = None, timeout: Optional[float] = None,
                      request_timeout: Optional[float] = None) -> CommandResult:
        """Create `branch` at HEAD and check it out."""
        call = _Call(envs, user, cwd, timeout, request_timeout)
        return self._git(build_create_branch_args(branch), path, call)

    def checkout_branch(self, path: str, branch: str, envs: Optional[Dict[str, str]] = None,
                        user: Optional[str] = None, cwd: Optional[str] = None, timeout: Optional[float] = None,
                        request_timeout: Optional[float] = None) -> CommandResult:
        call = _Call(envs, user, cwd, timeout, request_timeout)
        return self._git(build_checkout_branch_args(branch), path, call)

    def delete_branch(self, path: str, branch: str, force: bool = False, envs: Optional[Dict[str, str]] = None,
                      user: Optional[str] = None, cwd: Optional[str] = None, timeout: Optional[float] = None,
                      request_timeout: Optional[float] = None) -> CommandResult:
        """Delete `branch` (`-d`: merged only; `force`: `-D`)."""
        call = _Call(envs, user, cwd, timeout, request_timeout)
        return self._git(build_delete_branch_args(branch, force), path, call)

    def add(self, path: str, files: Optional[List[str]] = None, all: bool = True,
            envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
            timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> CommandResult:
        """Stage `files`; without them every change (`all`, `git add -A`) or
        those below the repository's directory (`git add .`)."""
        call = _Call(envs, user, cwd, timeout, request_timeout)
        return self._git(build_add_args(files, all), path, call)

    def commit(self, path: str, message: str, author_name: Optional[str] = None,
               author_email: Optional[str] = None, allow_empty: bool = False,
               envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
               timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> CommandResult:
        """Commit what is staged; the author, when given, for this commit only."""
        call = _Call(envs, user, cwd, timeout, request_timeout)
        return self._git(build_commit_args(message, author_name, author_email, allow_empty), path, call)

    def reset(self, path: str, mode: Optional[GitResetMode] = None, target: Optional[str] = None,
              paths: Optional[List[str]] = None, envs: Optional[Dict[str, str]] = None,
              user: Optional[str] = None, cwd: Optional[str] = None, timeout: Optional[float] = None,
              request_timeout: Optional[float] = None) -> CommandResult:
        """git reset [--mode] [target] [-- paths]; InvalidArgumentException for
        a mode git reset does not have."""
        call = _Call(envs, user, cwd, timeout, request_timeout)
        return self._git(build_reset_args(mode, target, paths), path, call)

    def restore(self, path: str, paths: List[str], staged: Optional[bool] = None,
                worktree: Optional[bool] = None, source: Optional[str] = None,
                envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
                timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> CommandResult:
        """git restore `paths` (["."]: all): the working tree by default,
        the index (unstage) with `staged=True`, from `source` when given."""
        call = _Call(envs, user, cwd, timeout, request_timeout)
        return self._git(build_restore_args(paths, staged, worktree, source), path, call)

    def push(self, path: str, remote: Optional[str] = None, branch: Optional[str] = None,
             set_upstream: bool = True, username: Optional[str] = None, password: Optional[str] = None,
             envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
             timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> CommandResult:
        """git push [remote] [branch], setting the upstream when a remote is
        named and `set_upstream`. username/password (a token) go into the
        remote's URL for the push only (the remote: `remote`, else the only
        one). GitUpstreamException when nothing says where to push,
        GitAuthException when the server wants (other) credentials."""
        _password_needs_username("push", username, password)
        call = _Call(envs, user, cwd, timeout, request_timeout)
        if username and password:
            name = self._resolve_remote_name(path, remote, call)
            args = build_push_args(name, remote=remote, branch=branch, set_upstream=set_upstream)
            return self._with_remote_credentials(path, name, username, password, call,
                                                 lambda: self._git(args, path, call))
        try:
            return self._git(build_push_args(None, remote=remote, branch=branch, set_upstream=set_upstream),
                             path, call)
        except CommandExitException as err:
            _raise_explained("push", err, username, password)
            raise

    def pull(self, path: str, remote: Optional[str] = None, branch: Optional[str] = None,
             username: Optional[str] = None, password: Optional[str] = None,
             envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
             timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> CommandResult:
        """git pull [remote] [branch]; without either, the branch's upstream
        (GitUpstreamException when it has none). Credentials as in push()."""
        _password_needs_username("pull", username, password)
        call = _Call(envs, user, cwd, timeout, request_timeout)
        if not remote and not branch and not self._has_upstream(path, call):
            raise GitUpstreamException(build_upstream_error_message("pull"))
        if username and password:
            name = self._resolve_remote_name(path, remote, call)
            args = build_pull_args(remote, branch, name)
            return self._with_remote_credentials(path, name, username, password, call,
                                                 lambda: self._git(args, path, call))
        try:
            return self._git(build_pull_args(remote, branch), path, call)
        except CommandExitException as err:
            _raise_explained("pull", err, username, password)
            raise

    def set_config(self, key: str, value: str, scope: str = "global", path: Optional[str] = None,
                   envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
                   timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> CommandResult:
        """git config `key` `value` in `scope` ("global", "system", or
        "local" with the repository's `path`)."""
        if not key:
            raise InvalidArgumentException("Git config key is required.")
        flag, repo_path = resolve_config_scope(scope, path)
        return self._git(["config", flag, key, value], repo_path, _Call(envs, user, cwd, timeout, request_timeout))

    def get_config(self, key: str, scope: str = "global", path: Optional[str] = None,
                   envs: Optional[Dict[str, str]] = None, user: Optional[str] = None, cwd: Optional[str] = None,
                   timeout: Optional[float] = None, request_timeout: Optional[float] = None) -> Optional[str]:
        """The value of `key` in `scope` (as set_config), None when it is not set there."""
        if not key:
            raise InvalidArgumentException("Git config key is required.")
        flag, repo_path = resolve_config_scope(scope, path)
        cmd = build_git_command(["config", flag, "--get", key], repo_path) + " || true"  # unset: no output
        return self._shell(cmd, _Call(envs, user, cwd, timeout, request_timeout)).stdout.strip() or None

    def dangerously_authenticate(self, username: str, password: str, host: str = "github.com",
                                 protocol: str = "https", envs: Optional[Dict[str, str]] = None,
                                 user: Optional[str] = None, cwd: Optional[str] = None,
                                 timeout: Optional[float] = None,
                                 request_timeout: Optional[float] = None) -> CommandResult:
        """Store username/password for `protocol`://`host` in git's global
        credential store (~/.git-credentials, in plain text), for every later
        git command of that user: code running in the sandbox can read them.
        Prefer short-lived tokens."""
        if not username or not password:
            raise InvalidArgumentException("Both username and password are required to authenticate git.")
        self.set_config("credential.helper", "store", scope="global", envs=envs, user=user, cwd=cwd,
                        timeout=timeout, request_timeout=request_timeout)
        cmd = build_credential_approve_command(username=username, password=password, host=host,
                                               protocol=protocol)
        return self._shell(cmd, _Call(envs, user, cwd, timeout, request_timeout))

    def configure_user(self, name: str, email: str, scope: str = "global", path: Optional[str] = None,
                       envs: Optional[Dict[str, str]] = None, user: Optional[str] = None,
                       cwd: Optional[str] = None, timeout: Optional[float] = None,
                       request_timeout: Optional[float] = None) -> CommandResult:
        """Set user.name and user.email in `scope` (as set_config)."""
        if not name or not email:
            raise InvalidArgumentException("Both name and email are required.")
        options = dict(scope=scope, path=path, envs=envs, user=user, cwd=cwd, timeout=timeout,
                       request_timeout=request_timeout)
        self.set_config("user.name", name, **options)
        return self.set_config("user.email", email, **options)
