"""E2B's `e2b_code_interpreter` module name for cellvm's SDK, so that E2B
programs run unchanged: put client/python and client/python/compat on
PYTHONPATH, and set $CELLVM_ADDR (a running agent) or $CELLVM_IMAGE (boot a
micro-VM). Opt-in, in a directory of its own, so that it never shadows E2B's
real package by accident. docs/SDK.md says what matches E2B and what differs.
`CodeInterpreter` is E2B 0.x's API, the legacy name (cellvm.legacy), so that
tutorials written for it (`sandbox.notebook.exec_cell`) run unchanged too."""

from cellvm import *  # noqa: F401,F403
from cellvm import __all__  # noqa: F401
