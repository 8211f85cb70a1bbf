"""e2b_code_interpreter.code_interpreter_sync under E2B's module name: cellvm.sandbox."""

from cellvm.sandbox import Sandbox  # noqa: F401
