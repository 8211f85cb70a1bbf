"""files.read(format="stream")'s readers, as E2B's FileStreamReader and
AsyncFileStreamReader: iterators that are also (async) context managers, so
`with sandbox.files.read(p, format="stream") as s:` (E2B's documented form)
ends the download's connection on leaving the block."""

from typing import AsyncIterator, Iterator

from . import _async_bridge as bridge


class FileStreamReader(Iterator[bytes]):
    """The chunks of a streamed read; close() (or the end, an error, or
    leaving a `with` block) ends the download's connection."""

    def __init__(self, chunks: Iterator[bytes], source=None):
        self._chunks = chunks
        self._source = source  # the generator that holds the connection
        self._closed = False

    def __iter__(self) -> "FileStreamReader":
        return self

    def __next__(self) -> bytes:
        try:
            return next(self._chunks)
        except BaseException:  # the end (StopIteration) and read errors alike
            self.close()
            raise

    def close(self) -> None:
        """Ends the download; safe to call more than once."""
        if not self._closed:
            self._closed = True
            self._chunks.close()
            if self._source is not None:  # chunks may not have started it
                self._source.close()

    def __enter__(self) -> "FileStreamReader":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class AsyncFileStreamReader(AsyncIterator[bytes]):
    """The sync reader as an async one: each chunk is read in a worker thread."""

    def __init__(self, reader: FileStreamReader):
        self._reader = reader

    def __aiter__(self) -> "AsyncFileStreamReader":
        return self

    async def __anext__(self) -> bytes:
        chunk = await bridge.call(next, self._reader, None)
        if chunk is None:
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        """Ends the download; safe to call more than once."""
        self._reader.close()

    async def __aenter__(self) -> "AsyncFileStreamReader":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()
