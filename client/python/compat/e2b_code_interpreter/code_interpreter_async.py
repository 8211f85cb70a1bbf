"""e2b_code_interpreter.code_interpreter_async under E2B's module name (E2B's
own async tests import AsyncSandbox from it): cellvm.async_sandbox."""

from cellvm.async_sandbox import AsyncSandbox  # noqa: F401
