"""e2b.sandbox._git.config under E2B's module name."""

from cellvm._git_args import resolve_config_scope

__all__ = ["resolve_config_scope"]
