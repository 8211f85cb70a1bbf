"""E2B's base `e2b` module name for cellvm's SDK (its Sandbox, files,
commands and exceptions); see e2b_code_interpreter/__init__.py beside it."""

from cellvm import *  # noqa: F401,F403
from cellvm import __all__  # noqa: F401
