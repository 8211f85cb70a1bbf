"""VMError: a VMM could not be started, or exited early. Its own module:
bootfiles.py raises it and vmm_qemu.py (which imports bootfiles) exports it.
"""


class VMError(Exception):
    """The VMM could not be started, or exited early."""
