"""e2b.sandbox._git under E2B's module name: sandbox.git's command lines,
output parsers and types, all of its submodules' names as E2B's has them."""

from . import args, auth, config, parse, types

__all__ = args.__all__ + auth.__all__ + config.__all__ + parse.__all__ + types.__all__
# Bound here by name, as E2B's package binds them (a star import would hide them from pyflakes).
globals().update({name: getattr(module, name) for module in (args, auth, config, parse, types)
                  for name in module.__all__})
