"""sandbox.git beyond E2B's own tests (tests/test_e2b_git_suite.py runs
those): git's output parsed in the shapes E2B's tests do not make, the
errors (a path that is no repository, what git's failures become,
arguments refused before anything runs), credentials taken out of a
remote's URL again whatever happens, and the async twin against a real agent."""

import asyncio

import pytest

from cellvm import (AsyncSandbox, CommandExitException, CommandResult, GitAuthException,
                    GitUpstreamException, InvalidArgumentException, Sandbox)
from cellvm._git_args import build_clone_plan, build_credential_approve_command
from cellvm._git_parse import parse_git_branches, parse_git_status
from cellvm.git import Git


# --- git's output -------------------------------------------------------------

def test_status_of_a_branch_ahead_and_behind_its_upstream():
    st = parse_git_status("## main...origin/main [ahead 2, behind 1]\nUU both.txt\n"
                          "R  old.txt -> new.txt\n M edited.txt\n?? new dir/\n")
    assert (st.current_branch, st.upstream, st.ahead, st.behind, st.detached) == \
        ("main", "origin/main", 2, 1, False)
    assert [(f.name, f.status, f.staged) for f in st.file_status] == [
        ("both.txt", "conflict", True), ("new.txt", "renamed", True),
        ("edited.txt", "modified", False), ("new dir/", "untracked", False)]
    assert st.file_status[1].renamed_from == "old.txt"
    assert (st.has_conflicts, st.conflict_count, st.staged_count, st.unstaged_count) == (True, 1, 2, 2)


@pytest.mark.parametrize("line, branch, detached", [
    ("## HEAD (no branch)", None, True),
    ("## HEAD (detached at 4d1e690)", None, True),
    ("## No commits yet on dev", "dev", False),
    ("## main...origin/main [gone]", "main", False),
])
def test_status_branch_lines(line, branch, detached):
    st = parse_git_status(line + "\n")
    assert (st.current_branch, st.detached, st.ahead, st.behind, st.is_clean) == (branch, detached, 0, 0, True)


def test_branches_while_detached():
    b = parse_git_branches("(HEAD detached at 4d1e690)\t*\nmain\t \nfeature\t \n")
    assert b.branches == ["(HEAD detached at 4d1e690)", "main", "feature"]
    assert b.current_branch == "(HEAD detached at 4d1e690)"


def test_clone_plan_takes_credentials_out_of_the_clone_afterwards():
    plan = build_clone_plan("https://github.com/o/repo.git", None, "dev", 1, "me", "tok", False)
    assert plan.args == ["clone", "https://me:tok@github.com/o/repo.git", "--branch", "dev",
                         "--single-branch", "--depth", "1"]
    assert (plan.repo_path, plan.sanitized_url, plan.should_strip) == \
        ("repo", "https://github.com/o/repo.git", True)
    kept = build_clone_plan("https://github.com/o/repo.git", "dst", None, None, "me", "tok", True)
    assert (kept.args[-1], kept.should_strip, kept.sanitized_url) == ("dst", False, None)
    with pytest.raises(InvalidArgumentException, match="destination path is required"):
        build_clone_plan("https://me:tok@host/", None, None, None, None, None, False)


def test_credentials_go_to_git_on_stdin():
    cmd = build_credential_approve_command("me", "it's", "", "")
    assert cmd == ("printf %s 'protocol=https\nhost=github.com\nusername=me\npassword=it'\"'\"'s\n\n' "
                   "| 'git' 'credential' 'approve'")


# --- what git's failures become (a scripted commands.run) ---------------------

class ScriptedCommands:
    """commands.run that records each command line and answers from `replies`:
    (a word of the command line, stdout, or a CommandExitException), first match wins."""

    def __init__(self, *replies):
        self.replies = replies
        self.ran = []

    def run(self, cmd, envs=None, user=None, cwd=None, timeout=None, request_timeout=None):
        self.ran.append(cmd)
        assert envs["GIT_TERMINAL_PROMPT"] == "0"
        for word, reply in self.replies:
            if word in cmd:
                if isinstance(reply, Exception):
                    raise reply
                return CommandResult(stdout=reply, stderr="", exit_code=0, error=None)
        return CommandResult(stdout="", stderr="", exit_code=0, error=None)


def failed(stderr):
    return CommandExitException(stderr=stderr, stdout="", exit_code=128, error="exit status 128")


AUTH = "fatal: could not read Username for 'https://github.com': terminal prompts disabled\n"


@pytest.mark.parametrize("action, username, message", [
    ("clone", None, "Git clone requires credentials for private repositories."),
    ("clone", "me", "Git clone requires a password/token for private repositories."),
    ("push", None, "Git push requires credentials for private repositories."),
    ("pull", "me", "Git pull requires a password/token for private repositories."),
])
def test_auth_failures(action, username, message):
    git = Git(ScriptedCommands(("'%s'" % action, failed(AUTH))))
    with pytest.raises(GitAuthException) as ei:
        if action == "clone":
            git.clone("https://github.com/o/private.git", "dst", username=username)
        else:
            getattr(git, action)("/repo", remote="origin", branch="main", username=username)
    assert str(ei.value) == message
    assert isinstance(ei.value.__cause__, CommandExitException)  # git's own words stay reachable


def test_push_without_upstream_and_other_failures():
    git = Git(ScriptedCommands(("'push'", failed("fatal: The current branch dev has no upstream branch.\n"))))
    with pytest.raises(GitUpstreamException, match="Set upstream once with set_upstream=True"):
        git.push("/repo")
    other = failed("error: src refspec nope does not match any\n")
    with pytest.raises(CommandExitException) as ei:
        Git(ScriptedCommands(("'push'", other))).push("/repo", remote="origin", branch="nope")
    assert ei.value is other


def test_pull_without_upstream_runs_no_pull():
    commands = ScriptedCommands(("@{u}", failed("fatal: no upstream configured for branch 'dev'\n")))
    with pytest.raises(GitUpstreamException, match="git branch --set-upstream-to=origin/<branch>"):
        Git(commands).pull("/repo")
    assert len(commands.ran) == 1 and "'pull'" not in commands.ran[0]


def test_push_with_credentials_puts_the_url_back_when_it_fails():
    url = "https://github.com/o/repo.git"
    commands = ScriptedCommands(("'get-url'", url + "\n"), ("'remote'", "origin\n"),
                                ("'push'", failed("fatal: unable to access: Could not resolve host\n")))
    with pytest.raises(CommandExitException, match="Could not resolve host"):
        Git(commands).push("/repo", username="me", password="tok")
    set_urls = [c for c in commands.ran if "set-url" in c]
    assert set_urls == ["'git' '-C' '/repo' 'remote' 'set-url' 'origin' 'https://me:tok@github.com/o/repo.git'",
                        "'git' '-C' '/repo' 'remote' 'set-url' 'origin' '%s'" % url]
    assert "'push' '--set-upstream' 'origin'" in commands.ran[-2]


def test_credentials_need_one_remote():
    commands = ScriptedCommands(("'remote'", "origin\nupstream\n"))
    with pytest.raises(InvalidArgumentException, match="Remote is required"):
        Git(commands).push("/repo", username="me", password="tok")


@pytest.mark.parametrize("call, message", [
    (lambda g: g.reset("/repo", mode="bogus"), "Reset mode must be one of soft, mixed, hard, merge, keep."),
    (lambda g: g.restore("/repo", paths=[]), "At least one path is required."),
    (lambda g: g.restore("/repo", ["a"], staged=False, worktree=False), "At least one of staged or worktree"),
    (lambda g: g.set_config("pull.rebase", "true", scope="local"), "Repository path is required"),
    (lambda g: g.get_config("user.name", scope="worktree"), "Git config scope must be one of"),
    (lambda g: g.push("/repo", password="tok"), "Username is required when using a password or token for git push."),
    (lambda g: g.clone("git://host/repo", "dst", username="me", password="tok"), "Only http(s) Git URLs"),
    (lambda g: g.remote_add("/repo", "", "https://x/y"), "Both remote name and URL are required"),
    (lambda g: g.configure_user("", "a@b"), "Both name and email are required."),
    (lambda g: g.dangerously_authenticate("me", ""), "Both username and password are required"),
])
def test_arguments_refused_before_anything_runs(call, message):
    commands = ScriptedCommands()
    with pytest.raises(InvalidArgumentException) as ei:
        call(Git(commands))
    assert message in str(ei.value)
    assert commands.ran == []


# --- against a real agent ----------------------------------------------------------

def test_a_path_that_is_no_repository(sbx, workdir):
    with pytest.raises(CommandExitException) as ei:
        sbx.git.status(workdir)
    assert ei.value.exit_code == 128 and "not a git repository" in ei.value.stderr
    assert sbx.git.remote_get(workdir, "origin") is None  # `|| true`: no remote there either


def test_push_with_credentials_leaves_no_trace_in_the_config(sbx, workdir):
    """The push fails (the agent gives user code no network), and the remote's
    URL is the one without the token again."""
    repo = workdir + "/repo"
    sbx.git.init(repo, initial_branch="main")
    sbx.git.configure_user("Bot", "bot@example.com", scope="local", path=repo)
    sbx.git.commit(repo, "empty", allow_empty=True)
    sbx.git.remote_add(repo, "origin", "https://127.0.0.1:1/o/repo.git")
    with pytest.raises(CommandExitException):
        sbx.git.push(repo, username="me", password="s3cret-token")
    assert sbx.git.remote_get(repo, "origin") == "https://127.0.0.1:1/o/repo.git"
    assert "s3cret-token" not in sbx.files.read(repo + "/.git/config")


def test_the_async_twin(agent, workdir):
    """AsyncSandbox.git: the same calls awaited, errors raised from the await,
    several in flight at once."""
    repo = workdir + "/arepo"

    async def main():
        sbx = AsyncSandbox(Sandbox.connect(agent.addr))
        try:
            git = sbx.git
            await git.init(repo, initial_branch="trunk")
            await git.configure_user("Bot", "bot@example.com", scope="local", path=repo)
            await sbx.files.write(repo + "/a.txt", "a\n")
            assert (await git.status(repo)).untracked_count == 1
            await git.add(repo)
            await git.commit(repo, "first")
            await git.create_branch(repo, "feature")
            status, branches, name = await asyncio.gather(
                git.status(repo), git.branches(repo), git.get_config("user.name", scope="local", path=repo))
            assert status.is_clean and status.current_branch == "feature"
            assert sorted(branches.branches) == ["feature", "trunk"] and name == "Bot"
            with pytest.raises(InvalidArgumentException):
                await git.reset(repo, mode="bogus")
            with pytest.raises(CommandExitException, match="not a git repository"):
                await git.status(workdir)
            log = await sbx.commands.run(f"git -C {repo} log --format=%an:%s")
            assert log.stdout == "Bot:first\n"
        finally:
            await sbx.close()

    asyncio.run(main())
