"""`python3 -m cellvm.snapshot_cli`: the templates create() restores from
(docs/SNAPSHOTS.md, "Templates"). `make snapshot` runs `create` for build/image.

    python3 -m cellvm.snapshot_cli create [--image DIR] [--memory-mb N] [--vcpus N] [--vmm qemu]
    python3 -m cellvm.snapshot_cli check  [same options]   # fits the launch? says what differs
    python3 -m cellvm.snapshot_cli list
    python3 -m cellvm.snapshot_cli remove NAME... | --all
"""

import argparse
import logging
import os
import shutil
import sys

from . import clone
from . import snapshot as snap


def _launch(args):
    return clone.Launch(args.image, vmm=args.vmm, memory_mb=args.memory_mb, vcpus=args.vcpus,
                        extra_cmdline=args.cmdline or "")


def cmd_create(args):
    launch = _launch(args)
    td = snap.TemplateDir(launch.name)
    found, why = clone._usable(td, launch.want)
    if found and not args.force:
        print(f"{found[0]}: up to date (use --force to build it again)")
        return 0
    with td.build_lock():
        d, m = clone.build(launch, td)
    print(f"{d}: built in {m.build_ms / 1000:.1f} s, state {m.state_size >> 10} KiB, "
          f"memory {m.memory_size >> 20} MiB")
    return 0


def cmd_check(args):
    launch = _launch(args)
    td = snap.TemplateDir(launch.name)
    found, why = clone._usable(td, launch.want)
    if found:
        print(f"{found[0]}: fits this launch")
        return 0
    print(f"{td.path}: {why or 'no template built yet (create builds one)'}")
    return 1


def cmd_list(args):
    rows = snap.list_templates()
    if not rows:
        print(f"no templates in {snap.template_root()}")
    for td, cur, m in rows:
        if isinstance(m, snap.SnapshotError):
            print(f"{td.name}  damaged: {m}")
        elif m is None:
            print(f"{td.name}  (no complete snapshot)")
        else:
            used = 0
            if m.memory and os.path.exists(os.path.join(cur, m.memory)):
                used = os.stat(os.path.join(cur, m.memory)).st_blocks * 512
            print(f"{td.name}  {m.vmm} {m.memory_mb} MiB {m.vcpus} vCPU  {m.image}  "
                  f"state {m.state_size >> 10} KiB, memory {used >> 20} MiB used  "
                  f"{os.path.basename(cur)}")
    return 0


def cmd_remove(args):
    names = [td.name for td, _, _ in snap.list_templates()] if args.all else args.names
    if not names:
        print("nothing to remove (give NAME... or --all)", file=sys.stderr)
        return 2
    rc = 0
    for name in names:
        td = snap.TemplateDir(name)
        if os.sep in name or not os.path.isdir(td.path):
            print(f"{name}: no such template in {snap.template_root()}", file=sys.stderr)
            rc = 1
            continue
        with td.build_lock():
            busy = [p for p in os.listdir(td.path) if p.startswith("t-")
                    and not snap.remove_unused(os.path.join(td.path, p))]
            if busy:
                print(f"{name}: {', '.join(busy)} in use by a restore: left", file=sys.stderr)
                rc = 1
                continue
        shutil.rmtree(td.path, ignore_errors=True)
        print(f"{name}: removed")
    return rc


def main(argv=None):
    from .launch import DEFAULT_IMAGE
    ap = argparse.ArgumentParser(prog="python3 -m cellvm.snapshot_cli",
                                 description="Templates Sandbox.create() restores from "
                                             f"(in {snap.template_root()}; ${snap.TEMPLATE_DIR_ENV})")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, fn, what in (("create", cmd_create, "build the template of a launch (~20 s under TCG)"),
                           ("check", cmd_check, "does the stored template fit the launch? (exit 1: no)")):
        p = sub.add_parser(name, help=what)
        p.add_argument("--image", default=DEFAULT_IMAGE, help="image directory (default %(default)s)")
        p.add_argument("--vmm", default="qemu", choices=clone.SNAPSHOT_VMMS)
        p.add_argument("--memory-mb", type=int, default=1024)
        p.add_argument("--vcpus", type=int, default=1)
        p.add_argument("--cmdline", help="extra kernel command line, as create(extra_cmdline=)")
        if name == "create":
            p.add_argument("--force", action="store_true", help="build even if one fits")
        p.set_defaults(fn=fn)
    p = sub.add_parser("list", help="the templates and their sizes")
    p.set_defaults(fn=cmd_list)
    p = sub.add_parser("remove", help="remove templates (not one a restore is reading)")
    p.add_argument("names", nargs="*")
    p.add_argument("--all", action="store_true")
    p.set_defaults(fn=cmd_remove)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        return args.fn(args)
    except (snap.SnapshotError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
