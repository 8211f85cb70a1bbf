"""e2b_code_interpreter.main under E2B 0.x's module name, where its
CodeInterpreter lived: cellvm.legacy, the legacy name."""

from cellvm.legacy import CodeInterpreter  # noqa: F401
