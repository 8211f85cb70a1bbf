"""sandbox.git's credentials and failures (E2B's e2b.sandbox._git.auth):
username and password in an http(s) URL and out of it again, and which
failed git commands mean "authentication" or "no upstream", with E2B's
messages for them."""

from typing import Optional
from urllib.parse import urlsplit, urlunsplit

from .exceptions import CommandExitException, InvalidArgumentException

_HTTP = ("http", "https")

# What git (and the servers it talks to) print when credentials are missing
# or wrong: GIT_TERMINAL_PROMPT=0 turns the prompt into "terminal prompts disabled".
_AUTH_FAILURES = (
    "authentication failed",
    "terminal prompts disabled",
    "could not read username",
    "invalid username or password",
    "access denied",
    "permission denied",
    "not authorized",
)

# What git prints when push or pull has no upstream branch to go by.
_NO_UPSTREAM = (
    "has no upstream branch",
    "no upstream branch",
    "no upstream configured",
    "no tracking information for the current branch",
    "no tracking information",
    "set the remote as upstream",
    "set the upstream branch",
    "please specify which branch you want to merge with",
)


def with_credentials(url: str, username: Optional[str], password: Optional[str]) -> str:
    """`url` with `username:password@` before its host; unchanged without
    either. Only http(s) URLs carry them (InvalidArgumentException)."""
    if not username and not password:
        return url
    if not (username and password):
        raise InvalidArgumentException("Both username and password are required when using Git credentials.")
    parts = urlsplit(url)
    if parts.scheme not in _HTTP:
        raise InvalidArgumentException("Only http(s) Git URLs support username/password credentials.")
    return urlunsplit(parts._replace(netloc=f"{username}:{password}@{parts.netloc}"))


def strip_credentials(url: str) -> str:
    """An http(s) `url` without the user information before its host; any
    other URL as it is."""
    parts = urlsplit(url)
    if parts.scheme not in _HTTP or not (parts.username or parts.password):
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _output_says(err: Exception, phrases) -> bool:
    if not isinstance(err, CommandExitException):
        return False
    text = f"{err.stderr}\n{err.stdout}".lower()
    return any(p in text for p in phrases)


def is_auth_failure(err: Exception) -> bool:
    """Whether a git command failed for want of (right) credentials."""
    return _output_says(err, _AUTH_FAILURES)


def is_missing_upstream(err: Exception) -> bool:
    """Whether a push or pull failed because the branch tracks no upstream."""
    return _output_says(err, _NO_UPSTREAM)


def build_auth_error_message(action: str, missing_password: bool) -> str:
    """GitAuthException's message for `action` ("clone", "push", "pull")."""
    need = "a password/token" if missing_password else "credentials"
    return f"Git {action} requires {need} for private repositories."


def build_upstream_error_message(action: str) -> str:
    """GitUpstreamException's message for `action`: how to name or set an upstream."""
    if action == "push":
        return ("Git push failed because no upstream branch is configured. "
                "Set upstream once with set_upstream=True (and optional remote/branch), "
                "or pass remote and branch explicitly.")
    return ("Git pull failed because no upstream branch is configured. "
            "Pass remote and branch explicitly, or set upstream once (push with "
            "set_upstream=True or run: git branch --set-upstream-to=origin/<branch> <branch>).")
