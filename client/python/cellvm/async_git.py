"""AsyncSandbox.git: E2B's async Git API (e2b/sandbox_async/git.py) over
cellvm's sync one (cellvm.git): each method is Git's, with its signature,
awaited. A call runs in a worker thread (cellvm._async_bridge) from its
first git command to its last: cancelled, the await ends at once and the
call still finishes, so a push with credentials still takes them out of
the remote's URL."""

import functools

from . import _async_bridge as bridge
from .async_commands import AsyncCommands
from .git import Git


def _awaited(method):
    """Git's `method` as a coroutine function: same name, signature and doc."""
    @functools.wraps(method)
    async def run(self, *args, **kwargs):
        return await bridge.call(method, self._git, *args, **kwargs)
    run.__qualname__ = "AsyncGit." + method.__name__
    return run


class AsyncGit:
    """E2B's async sandbox.git."""

    def __init__(self, commands: AsyncCommands) -> None:
        self._git = Git(commands._cmds)

    clone = _awaited(Git.clone)
    init = _awaited(Git.init)
    remote_add = _awaited(Git.remote_add)
    remote_get = _awaited(Git.remote_get)
    status = _awaited(Git.status)
    branches = _awaited(Git.branches)
    create_branch = _awaited(Git.create_branch)
    checkout_branch = _awaited(Git.checkout_branch)
    delete_branch = _awaited(Git.delete_branch)
    add = _awaited(Git.add)
    commit = _awaited(Git.commit)
    reset = _awaited(Git.reset)
    restore = _awaited(Git.restore)
    push = _awaited(Git.push)
    pull = _awaited(Git.pull)
    set_config = _awaited(Git.set_config)
    get_config = _awaited(Git.get_config)
    dangerously_authenticate = _awaited(Git.dangerously_authenticate)
    configure_user = _awaited(Git.configure_user)
