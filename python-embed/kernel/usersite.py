"""The sandbox user's environment in a forked executor: HOME, Python's user
site (where `pip install` puts packages, docs/IMAGE.md "pip") on sys.path,
~/.local/bin on PATH, and no pager for `!` commands.

The zygote starts as root with the agent's environment (HOME=/root in the
guest) and each executor drops to the sandbox user after the fork, so what
site.py worked out at the zygote's start is root's: USER_SITE under /root,
and on sys.path only if that directory existed then. executor_prepare()
redoes it for the user; refresh() runs after every `!cmd` and `%pip`, so a
package installed there imports in the same context."""

import importlib
import os
import site
import sys

# The account user code runs as (agent/services.h, SVC_SANDBOX_USER).
SANDBOX_USER = "user"


def _fix_home():
        """HOME, USER and LOGNAME of the sandbox user, as the agent gives its
        commands, when the executor runs as that user with a HOME that is not
        theirs (root's, unwritable: the guest). Elsewhere (a dev agent, run as
        a developer or as root on a host without that user) nothing changes.
        True when HOME changed."""
        home = os.environ.get("HOME")
        if home and os.path.isdir(home) and os.access(home, os.W_OK | os.X_OK):
                return False
        try:
                import pwd
                pw = pwd.getpwuid(os.getuid())
        except (ImportError, KeyError):
                return False
        if pw.pw_name != SANDBOX_USER or pw.pw_uid == 0 or not os.path.isdir(pw.pw_dir) \
                or not os.access(pw.pw_dir, os.W_OK | os.X_OK):
                return False
        os.environ["HOME"] = pw.pw_dir
        os.environ["USER"] = os.environ["LOGNAME"] = pw.pw_name
        return True


def _user_paths():
        """site's USER_BASE and USER_SITE worked out again from this
        process's HOME (or $PYTHONUSERBASE)."""
        site.USER_BASE = None
        site.USER_SITE = None
        site.getusersitepackages()
        import sysconfig
        cached = getattr(sysconfig, "_CONFIG_VARS", None)  # get_config_vars() caches it
        if cached and "userbase" in cached:
                cached["userbase"] = site.USER_BASE


def add_user_site():
        """Puts the user site on sys.path as site.py does at startup (before
        the system's site-packages, with its .pth files) if it exists and is
        not there yet. True when sys.path changed."""
        user_site = site.USER_SITE
        if not site.ENABLE_USER_SITE or not user_site or user_site in sys.path \
                or not os.path.isdir(user_site):
                return False
        before = list(sys.path)
        site.addsitedir(user_site)  # appends it, and what its .pth files name
        added = [p for p in sys.path if p not in before]
        system = set(site.getsitepackages())
        at = next((i for i, p in enumerate(before) if p in system), len(before))
        sys.path[:] = before[:at] + added + before[at:]
        return True


def _add_user_bin():
        """~/.local/bin (pip's scripts) first on PATH, as Debian's ~/.profile
        puts it for commands, when it exists."""
        if not site.USER_BASE:
                return
        bin_dir = os.path.join(site.USER_BASE, "bin")
        path = os.environ.get("PATH", "")
        if os.path.isdir(bin_dir) and bin_dir not in path.split(os.pathsep):
                os.environ["PATH"] = bin_dir + (os.pathsep + path if path else "")


def prepare():
        """In a forked executor, as the sandbox user (executor_prepare)."""
        home_fixed = _fix_home()
        _user_paths()
        add_user_site()
        if home_fixed:
                _add_user_bin()
        # ipykernel's init_environment: `!` commands run on a terminal, where
        # git and others would start a pager (less, which the image lacks);
        # TERM and CLICOLOR as it sets them (os.environ shows them, and tools
        # run from a cell read them).
        os.environ["PAGER"] = "cat"
        os.environ["GIT_PAGER"] = "cat"
        os.environ["TERM"] = "xterm-color"
        os.environ["CLICOLOR"] = "1"


def refresh():
        """After a `!` command or %pip: a user site pip has just created joins
        sys.path, and the import system forgets the directory listings and
        distribution metadata it cached."""
        add_user_site()
        importlib.invalidate_caches()
