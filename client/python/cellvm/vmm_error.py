"""VMError: a VMM could not be started, or exited early. Its own module:
launch.py raises and catches it.
"""


class VMError(Exception):
    """The VMM could not be started, or exited early."""
