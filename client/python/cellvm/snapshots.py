"""E2B's snapshots API (docs/SNAPSHOTS.md, "Kept snapshots"):

    info = sbx.create_snapshot(name="ready")     # SnapshotInfo(snapshot_id="ready:default", ...)
    other = Sandbox.create(info.snapshot_id)     # a new sandbox of it, as often as asked
    Sandbox.list_snapshots().next_items()        # [SnapshotInfo, ...], newest first
    Sandbox.delete_snapshot(info.snapshot_id)    # True; False when there is none

The C CLI keeps them (`cellvm create-snapshot`, `list-snapshots`,
`delete-snapshot`: client/c/cli_snapshots.c, on the store cellvm serve uses
too), and `Sandbox.create(snapshot_id)` is `cellvm create --template`, which
resumes a copy of the snapshot with a generation of its own. The source runs
on; its clock, stopped by the save, is set again over this process's
connection when it holds it, as fork() does.
"""

import json
import re
import subprocess
from dataclasses import dataclass, field
from typing import List

from ._paginator import Pages

_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$")
_NOT_FOUND = 1  # cellvm delete-snapshot's status when there is none


@dataclass
class SnapshotInfo:
    """E2B's SnapshotInfo: the id Sandbox.create() takes, and its full names."""

    snapshot_id: str
    names: List[str] = field(default_factory=list)


def create(source, name=None) -> SnapshotInfo:
    """create_snapshot() of `source` (a Sandbox, or a sandbox id)."""
    from . import host
    from .exceptions import InvalidArgumentException
    from .fork import saved_source, set_time_after_save
    if name is not None and (not isinstance(name, str) or not _NAME.match(name)):
        raise InvalidArgumentException(f"Invalid snapshot name {name!r}: 1 to 128 letters, "
                                       "digits, '-', '_' or '.' (not first)")
    owner, key = saved_source(source, "create_snapshot")
    args = ["create-snapshot", "--json", *(["--name", name] if name else []), key]
    info = json.loads(host.run(args, f"create_snapshot({key})"))
    set_time_after_save(owner, f"create_snapshot({key})")
    return SnapshotInfo(snapshot_id=info["snapshotID"], names=list(info.get("names") or []))


def delete(snapshot_id) -> bool:
    """delete_snapshot(): True, or False when there is no such snapshot."""
    from . import host
    r = subprocess.run([host.binary(), "delete-snapshot", str(snapshot_id)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if r.returncode == _NOT_FOUND:
        return False
    if r.returncode != 0:
        raise host._error(f"delete_snapshot({snapshot_id})", r)
    return True


class SnapshotPaginator(Pages):
    """E2B's SnapshotPaginator: `has_next`, `next_token`, `next_items()`.
    The list is taken at the first next_items(); `next_token` is the id of the
    next page's first snapshot. E2B's connection options (`**opts`) are accepted."""

    def __init__(self, sandbox_id=None, limit=None, next_token=None, name=None, **opts):
        from .exceptions import InvalidArgumentException
        if limit is not None and int(limit) < 1:
            raise InvalidArgumentException("limit should be at least 1")
        self.sandbox_id = sandbox_id
        self.name = name
        self.limit = limit
        self._next_token = next_token
        self._has_next = True
        self._items = None

    def next_items(self, **opts) -> List[SnapshotInfo]:
        """The next page of SnapshotInfo. Call it only while has_next."""
        if not self._has_next:
            raise Exception("No more items to fetch")  # E2B's wording and class
        if self._items is None:
            self._items = self._collect()
        keys = [k for k, _ in self._items]
        start = keys.index(self._next_token) if self._next_token in keys else 0
        if self._next_token is not None and self._next_token not in keys:
            start = len(keys)  # that snapshot is gone: nothing after it
        end = len(keys) if not self.limit else min(len(keys), start + int(self.limit))
        page = [info for _, info in self._items[start:end]]
        self._next_token = keys[end] if end < len(keys) else None
        self._has_next = self._next_token is not None
        return page

    def _collect(self):
        from . import host
        args = ["list-snapshots", "--json"]
        if self.sandbox_id:
            args += ["--sandbox", str(self.sandbox_id)]
        if self.name:
            args += ["--name", str(self.name)]
        return [(s["key"], SnapshotInfo(snapshot_id=s["snapshotID"], names=list(s["names"])))
                for s in json.loads(host.run(args, "list_snapshots()"))]


class AsyncSnapshotPaginator(SnapshotPaginator):
    """E2B's AsyncSnapshotPaginator: `await next_items()`."""

    async def next_items(self, **opts) -> List[SnapshotInfo]:
        from . import _async_bridge as bridge
        return await bridge.call(SnapshotPaginator.next_items, self)
