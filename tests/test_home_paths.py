"""`~` in paths and command cwds against a real agent (dev mode), as E2B's envd
expands them (e2b-dev/infra packages/envd/internal/permissions/path.go
`expand`, `ExpandAndResolve`): "~" and "~/x" are the request user's home
(here the agent's --workdir), "~name" is refused ("cannot expand
user-specific home dir"), and a "~" anywhere else is an ordinary character.
A command's cwd that does not exist is envd's invalid argument "cwd '<path>'
does not exist" (services/process/handler/handler.go `New`), not a failed
start.
"""

import os
import shutil
import time

import pytest

from cellvm import FilesystemEventType, InvalidArgumentException, PtySize

TILDE_USER = r"failed to expand path '{}' for user '[^']+': cannot expand user-specific home dir"


def home_path(agent, *parts):
    return os.path.join(agent.workdir, *parts)


@pytest.fixture(autouse=True)
def leave_the_home_as_found(agent):
    """These tests write into the session agent's home itself (that is what
    "~" is); what they made goes afterwards, so other tests' listings of the
    home do not see it."""
    before = set(os.listdir(agent.workdir))
    yield
    for name in set(os.listdir(agent.workdir)) - before:
        p = home_path(agent, name)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)


def test_files_expand_tilde_to_the_home(sbx, agent):
    info = sbx.files.write("~/hp-tilde.txt", "t")
    assert info.path == home_path(agent, "hp-tilde.txt")
    assert open(home_path(agent, "hp-tilde.txt")).read() == "t"
    assert not os.path.exists(home_path(agent, "~"))
    assert sbx.files.read("~/hp-tilde.txt") == "t"
    assert sbx.files.exists("~/hp-tilde.txt") and not sbx.files.exists("~/hp-nope.txt")
    assert sbx.files.get_info("~/hp-tilde.txt").path == home_path(agent, "hp-tilde.txt")
    assert sbx.files.get_info("~").path == agent.workdir
    # "~" alone and "~/" list the home itself.
    for home in ("~", "~/"):
        listed = {e.name: e.path for e in sbx.files.list(home)}
        assert listed["hp-tilde.txt"] == home_path(agent, "hp-tilde.txt"), listed
    assert sbx.files.make_dir("~/hp-made/sub") is True
    assert os.path.isdir(home_path(agent, "hp-made", "sub"))
    assert sbx.files.make_dir("~/hp-made/sub") is False
    # Both ends of a rename.
    moved = sbx.files.rename("~/hp-tilde.txt", "~/hp-made/moved.txt")
    assert moved.path == home_path(agent, "hp-made", "moved.txt")
    assert not os.path.exists(home_path(agent, "hp-tilde.txt"))
    sbx.files.remove("~/hp-made")
    assert not os.path.exists(home_path(agent, "hp-made"))


def test_tilde_elsewhere_and_backslash(sbx, agent):
    # Only a leading "~" is expanded: "a/~/b" is a directory named "~".
    info = sbx.files.write("hp-lit/~/x.txt", "x")
    assert info.path == home_path(agent, "hp-lit", "~", "x.txt")
    assert os.path.isfile(home_path(agent, "hp-lit", "~", "x.txt"))
    # envd expands "~\\x" too: filepath.Join(home, "\\x"), a name with a backslash.
    info = sbx.files.write("~\\hp-back.txt", "b")
    assert info.path == home_path(agent, "\\hp-back.txt")


def test_another_users_home_is_refused(sbx):
    for call in (lambda: sbx.files.write("~other/x.txt", "x"),
                 lambda: sbx.files.read("~other/x.txt"),
                 lambda: sbx.files.list("~other/x.txt"),
                 lambda: sbx.files.make_dir("~other/x.txt"),
                 lambda: sbx.files.rename("~other/x.txt", "hp-y.txt")):
        with pytest.raises(InvalidArgumentException, match=TILDE_USER.format("~other/x.txt")):
            call()
    with pytest.raises(InvalidArgumentException, match=TILDE_USER.format("~root")):
        sbx.commands.run("pwd", cwd="~root")


def test_watch_a_tilde_path(sbx, agent):
    d = home_path(agent, "hp-watch")
    os.makedirs(d, exist_ok=True)
    agent.give_to_sandbox_user(d)
    h = sbx.files.watch_dir("~/hp-watch")
    try:
        sbx.files.write("~/hp-watch/w.txt", "1")
        deadline = time.monotonic() + 5
        seen = []
        while ("w.txt", FilesystemEventType.CREATE) not in seen and time.monotonic() < deadline:
            seen += [(e.name, e.type) for e in h.get_new_events()]
            time.sleep(0.05)
        assert ("w.txt", FilesystemEventType.CREATE) in seen, seen
    finally:
        h.stop()


def test_command_cwd_tilde(sbx, agent):
    assert sbx.commands.run("pwd", cwd="~").stdout == agent.workdir + "\n"
    os.makedirs(home_path(agent, "hp-cwd"), exist_ok=True)
    assert sbx.commands.run("pwd", cwd="~/hp-cwd").stdout == home_path(agent, "hp-cwd") + "\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's home needs a root agent")
def test_command_cwd_tilde_is_the_requested_users_home(sbx):
    assert sbx.commands.run("pwd", cwd="~", user="root").stdout == os.path.expanduser("~root") + "\n"


def test_a_missing_cwd_is_an_invalid_argument(sbx, agent):
    with pytest.raises(InvalidArgumentException, match="cwd '/no/such/dir' does not exist$"):
        sbx.commands.run("true", cwd="/no/such/dir")
    # The resolved path, as envd names it; a background start and a terminal alike.
    missing = home_path(agent, "hp-not-made")
    for cwd in ("hp-not-made", "~/hp-not-made"):
        with pytest.raises(InvalidArgumentException, match=f"cwd '{missing}' does not exist$"):
            sbx.commands.run("true", cwd=cwd, background=True)
    with pytest.raises(InvalidArgumentException, match=f"cwd '{missing}' does not exist$"):
        sbx.pty.create(PtySize(rows=24, cols=80), cwd="~/hp-not-made")
    assert sbx.commands.run("echo still fine").stdout == "still fine\n"
