"""A VM of `cellvm create --json` (the C CLI's launch, as the SDK's create()
runs it) for tests that look at the guest console or wait for the guest to
end the machine by itself: its console stays readable after QEMU exited
(the keeper removes the VM's directory then)."""

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import host  # noqa: E402
from conftest import BOOT_TIMEOUT, IMAGE, process_gone  # noqa: E402


class CreatedVM:
    """`info` is the CLI's entry (`cellvm create --json`, or a Sandbox's
    `_vm.info`): the console file is opened right away."""

    def __init__(self, info):
        self.info = info
        self.pid = int(info["pid"])
        self._console = open(os.path.join(info["dir"], "console.log"), "rb")

    def console(self):
        fd = self._console.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def argv(self):
        """QEMU's command line as it runs."""
        with open(f"/proc/{self.pid}/cmdline", "rb") as f:
            return [a.decode() for a in f.read().split(b"\0")[:-1]]

    def wait(self, timeout):
        """Waits for QEMU to exit (the guest ended the machine)."""
        deadline = time.monotonic() + timeout
        while not process_gone(self.pid):
            assert time.monotonic() < deadline, "QEMU did not exit"
            time.sleep(0.05)

    def kill(self):
        host.kill(self.info["sandbox_id"])
        self._console.close()


def create(memory_mb=512, **vm_args):
    """A cold-booted VM (no template) of build/image with `vm_args` (as
    cellvm.host.vm_args): (CreatedVM, its agent Connection, HELLO done)."""
    opts = host.vm_args(IMAGE, memory_mb=memory_mb, snapshot=False, boot_timeout=BOOT_TIMEOUT,
                        **vm_args)
    info, conn = host.create(opts, timeout=3600)
    try:
        return CreatedVM(info), conn
    except BaseException:
        conn.close()
        host.kill(info["sandbox_id"])
        raise
