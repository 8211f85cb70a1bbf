"""A request's messages one at a time (sandbox.py's cells, commands.py's
processes): its own module so that commands.py needs no import of
sandbox.py, which imports it.
"""

from . import _wire
from .exceptions import SandboxException

POLL_S = 0.2
"""How long next() waits for a message before TimeoutError (the caller
checks its deadline and interrupts between polls)."""


class _Messages:
    """A request's messages one at a time; TimeoutError after POLL_S without one.

    Keeps one generator while messages flow (cheap per message) and starts a
    new one after a timeout, which ends the old generator."""

    def __init__(self, req):
        self._req = req
        self._gen = None

    def next(self):
        if self._gen is None:
            self._gen = self._req.messages(timeout=POLL_S)
        try:
            return next(self._gen)
        except TimeoutError:
            self._gen = None
            raise
        except StopIteration:
            self._gen = None
            raise SandboxException("request ended without a terminal message") from None
        except (_wire.ConnectionClosed, _wire.ProtocolError, _wire.AgentError) as e:
            self._gen = None
            exc = SandboxException(f"connection to the agent failed: {e}")
            exc.connection_failed = True  # the caller asks whether the sandbox ended
            raise exc from None
