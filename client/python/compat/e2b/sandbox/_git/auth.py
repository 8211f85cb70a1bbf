"""e2b.sandbox._git.auth under E2B's module name."""

from cellvm._git_auth import (build_auth_error_message, build_upstream_error_message, is_auth_failure,
                              is_missing_upstream, strip_credentials, with_credentials)

__all__ = ["build_auth_error_message", "build_upstream_error_message", "is_auth_failure",
           "is_missing_upstream", "strip_credentials", "with_credentials"]
