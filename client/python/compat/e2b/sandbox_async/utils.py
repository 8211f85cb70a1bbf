"""e2b.sandbox_async.utils under E2B's module name: OutputHandler (a
function or a coroutine function)."""

from cellvm.models import OutputHandler  # noqa: F401
