"""Every Sandbox of this process that is not closed, for Sandbox.list() and
the class-level kill/get_info/connect of a sandbox id; its own module so
that pause.py (which swaps a resumed VM into its Sandbox) needs no import of
sandbox.py, which imports it.
"""

import threading
import weakref

_LIVE = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def register(sbx):
    with _LIVE_LOCK:
        _LIVE.add(sbx)


def forget(sbx):
    with _LIVE_LOCK:
        _LIVE.discard(sbx)


def live(sandbox_id=None):
    """This process's open sandboxes (with that id, or that agent address:
    the id a VM had before ids were registry keys), oldest first."""
    with _LIVE_LOCK:
        found = [s for s in _LIVE if not s._closed
                 and (sandbox_id is None or sandbox_id in (s._id, s._addr))]
    return sorted(found, key=lambda s: s._started_at)
