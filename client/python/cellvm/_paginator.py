"""What E2B's paginators share (SandboxPaginator, SnapshotPaginator): the
state a caller reads between pages."""

from typing import Optional


class Pages:
    """`has_next` and `next_token`, set by a subclass's next_items()."""

    _has_next = True
    _next_token: Optional[str] = None

    @property
    def has_next(self) -> bool:
        """True while there are more items to fetch."""
        return self._has_next

    @property
    def next_token(self) -> Optional[str]:
        """The token of the next page; None after the last one."""
        return self._next_token
