"""IPython.core.error's errors that the kernel raises."""


class StdinNotImplementedError(NotImplementedError):
        """IPython.core.error.StdinNotImplementedError: the frontend takes no input."""


class UsageError(Exception):
        """IPython's UsageError: a magic was misused or does not exist."""

        __module__ = "IPython.core.error"  # as sys.last_type shows it
