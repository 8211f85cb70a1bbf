"""ipykernel.kernelbase's pre/post_handler_hook: SIGINT raises
KeyboardInterrupt only while a cell runs."""

import signal

import _signal


_SIGINT = int(signal.SIGINT)
_SIG_IGN = int(signal.SIG_IGN)


def _set_sigint(running):
        # ipykernel: SIGINT raises KeyboardInterrupt only while a cell runs.
        # _signal.signal: the signal module's wrapper costs enum conversions per call.
        # getsignal() reads Python's own table (no syscall): a handler already
        # in place is not installed again.
        handler = _signal.default_int_handler if running else _SIG_IGN
        if _signal.getsignal(_SIGINT) != handler:
                _signal.signal(_SIGINT, handler)
