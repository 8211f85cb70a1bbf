"""IPython.core.getipython's get_ipython(): the running kernel's shell."""

from .session import _state


def _ipython_get_ipython():
        """IPython.get_ipython (and IPython.core.getipython's): the kernel's shell."""
        kernel = _state.kernel
        return None if kernel is None else kernel.shell


_ipython_get_ipython.__name__ = _ipython_get_ipython.__qualname__ = "get_ipython"
_ipython_get_ipython.__module__ = "IPython.core.getipython"


def _on_ipython_getipython_import(mod):
        # IPython's own modules copy the name right after this one is imported.
        _ipython_get_ipython.__doc__ = mod.get_ipython.__doc__
        mod.get_ipython = _ipython_get_ipython


def _shell_config():
        """The shell's traitlets config, if a cell has asked for it (or None)."""
        kernel = _state.kernel
        return None if kernel is None else kernel.shell.__dict__.get("config")


def _shell_events():
        kernel = _state.kernel
        return None if kernel is None else kernel.shell.__dict__.get("events")
