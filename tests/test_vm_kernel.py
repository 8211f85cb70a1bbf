"""The all-built-in kernel of `make kernel` (build/kernel/, docs/IMAGE.md)
booting the image of `make image` in QEMU microvm, two ways:

- without an initramfs: the kernel mounts /dev/vda read-only itself and runs
  /sbin/cellvm-init, which must put the same tmpfs overlay over / as the
  initramfs path does. Booted from `vmlinux` (the PVH entry Firecracker and
  Cloud Hypervisor use).
- with the image's initramfs (its modules are for Debian's kernel): init
  must see there is nothing to load for this kernel and say so in one line,
  then switch root as usual. Booted from `bzImage`.

Skipped unless `make kernel` was run (CI does not build a kernel: ~10 min).
The VMs have no Python preloads; the cell imports numpy itself.
"""

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

import created_vm  # noqa: E402
from cellvm import Sandbox  # noqa: E402
from conftest import FIRST_RUN_TIMEOUT, build_image_or_skip  # noqa: E402

KERNEL_DIR = os.path.join(ROOT, "build", "kernel")
NO_PRELOAD = "cellvm.agent_args=\"--preload ''\""
CHECK_CMD = ("cat /proc/1/comm; uname -r; touch /home/user/x && stat -c %U /home/user/x; "
             "test -e /proc/modules && echo modules || echo no-modules; cat /proc/mounts")


def kernel_or_skip(name):
    path = os.path.join(KERNEL_DIR, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} not found: run `make kernel` (optional, not built in CI)")
    build_image_or_skip()
    return path


def boot(kernel, initramfs):
    """The CLI's boot-file options: `initramfs=None` boots without one (the
    launcher adds root=/dev/vda ro init=/sbin/cellvm-init)."""
    vm, conn = created_vm.create(memory_mb=1024, kernel=kernel, initramfs=initramfs,
                                 extra_cmdline=NO_PRELOAD)
    try:
        boot_stamps = dict(conn.hello.get("boot", {}))
        conn.close()
        sbx = Sandbox.connect(vm.info["address"], request_timeout=FIRST_RUN_TIMEOUT)
    except BaseException:
        conn.close()
        vm.kill()
        raise
    return vm, sbx, boot_stamps


def release():
    with open(os.path.join(KERNEL_DIR, "release")) as f:
        return f.read().strip()


def mounts(out):
    """/proc/mounts lines of CHECK_CMD's output: {mount point: (type, options)}."""
    return {f[1]: (f[2], f[3]) for f in (ln.split() for ln in out.splitlines()) if len(f) == 6}


def booted(kernel_name, initramfs):
    """A module fixture's body: (vm, sandbox, boot stamps) until the module ends."""
    vm, sbx, stamps = boot(kernel_or_skip(kernel_name), initramfs)
    try:
        yield vm, sbx, stamps
    finally:
        sbx.kill()
        vm.kill()


@pytest.fixture(scope="module")
def no_initramfs():
    yield from booted("vmlinux", None)


@pytest.fixture(scope="module")
def with_initramfs():
    yield from booted("bzImage", True)


def check_guest(sbx):
    """PID 1, our kernel, a writable home on the overlay root, a numpy cell."""
    out = sbx.commands.run(CHECK_CMD).stdout
    lines = out.splitlines()
    assert lines[:5] == ["cellvm-init", release(), "user", "no-modules", lines[4]], out
    return mounts(out)


def test_no_initramfs_overlay_root_and_a_cell(no_initramfs):
    vm, sbx, stamps = no_initramfs
    m = check_guest(sbx)
    fstype, opts = m["/"]
    # The kernel's read-only ext4 root is the lower layer, a tmpfs the upper;
    # the old root and the staging tmpfs are gone from the mount table.
    assert fstype == "overlay" and "lowerdir=/," in opts and opts.startswith("rw,"), m
    assert "/mnt" not in m and not any(t == "ext4" for t, _ in m.values()), m
    assert {p for p in ("/dev", "/proc", "/sys", "/run", "/tmp") if p in m} == {
        "/dev", "/proc", "/sys", "/run", "/tmp"}, m
    ex = sbx.run_code("import numpy; 1+1", timeout=FIRST_RUN_TIMEOUT)
    assert ex.error is None and ex.text == "2", ex
    # init stamped the in-place overlay as the root mount, and the module step.
    assert stamps["mounts_done"] <= stamps["modules_loaded"] <= stamps["root_mounted"] \
        <= stamps["system_ready"], stamps


def test_no_initramfs_boot_is_clean(no_initramfs):
    vm, _, _ = no_initramfs
    console = vm.console().replace("\r", "")
    assert not re.search(r"cellvm-init: (warning|error)", console), console


def test_initramfs_without_modules_for_this_kernel(with_initramfs):
    vm, sbx, stamps = with_initramfs
    m = check_guest(sbx)
    assert m["/"][0] == "overlay" and "lowerdir=/.cellvm-lower," in m["/"][1], m
    ex = sbx.run_code("import numpy; 1+1", timeout=FIRST_RUN_TIMEOUT)
    assert ex.error is None and ex.text == "2", ex
    console = vm.console().replace("\r", "")
    skipped = re.findall(r"cellvm-init: no /lib/modules/(\S+): kernel with built-in drivers\? "
                         r"/etc/cellvm/modules skipped", console)
    assert skipped == [release()], console
    assert not re.search(r"cellvm-init: (warning|error)", console), console
    assert stamps["modules_loaded"] <= stamps["root_mounted"], stamps
