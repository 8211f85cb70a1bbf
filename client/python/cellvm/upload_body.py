"""Request bodies read as streams, for upload_url()'s server (file_urls.py):
a body of a Content-Length or chunked, and the file parts of a
multipart/form-data body, each read as it arrives, so an upload of any size
goes to the sandbox in slices and is never held whole.

Every read is bounded: a chunk-size line, a part's headers and the padding
after a delimiter have limits, and a body that ends early or breaks the
format raises ValueError (the upload then fails and its file is not written)."""

import email.parser
import email.policy

SLICE = 256 * 1024       # as much as the files API sends at once
LINE_MAX = 1024          # a chunk-size line, with its extensions
HEADERS_MAX = 16 * 1024  # one part's headers
PADDING_MAX = 1024       # blanks after a delimiter


class Body:
    """The request body from `rfile`: `length` bytes, or chunked."""

    def __init__(self, rfile, length=None, chunked=False):
        self._rfile, self._left, self._chunked, self._done = rfile, length, chunked, False
        if chunked:
            self._left = 0  # what is left of the current chunk

    def read(self, n=SLICE):
        """Up to `n` bytes, b"" at the end of the body."""
        if self._done:
            return b""
        if self._chunked and self._left == 0:
            self._left = self._chunk_size()
            if self._left == 0:
                self._trailers()
                self._done = True
                return b""
        data = self._rfile.read(min(n, self._left)) if self._left else b""
        if not data and self._left:
            raise ValueError("the body ended before its end (a client that left?)")
        self._left -= len(data)
        if self._left == 0:
            if self._chunked:
                if self._rfile.read(2) != b"\r\n":
                    raise ValueError("chunked body: a chunk not followed by CRLF")
            else:
                self._done = True
        return data

    def _line(self):
        line = self._rfile.readline(LINE_MAX + 1)
        if len(line) > LINE_MAX:
            raise ValueError("chunked body: a line over 1 KiB")
        if not line.endswith(b"\n"):
            raise ValueError("the body ended before its end (a client that left?)")
        return line.rstrip(b"\r\n")

    def _chunk_size(self):
        size = self._line().split(b";", 1)[0].strip()
        try:
            return int(size, 16)
        except ValueError:
            raise ValueError(f"chunked body: a chunk size that is not hex: {size[:40]!r}") from None

    def _trailers(self):
        for _ in range(64):
            if not self._line():
                return
        raise ValueError("chunked body: more than 64 trailer lines")


class Multipart:
    """The parts of a multipart/form-data body read from `body` (a Body),
    one after the other: next_part() gives a part's headers (an email
    Message: get_filename()), read() its content, until b""."""

    def __init__(self, body, boundary):
        if not boundary or len(boundary) > 70:
            raise ValueError("a multipart body needs a boundary of 1 to 70 characters")
        self._body = body
        # The first delimiter may start the body: CRLF before it makes every
        # delimiter the same. What is read so far is _buf[_pos:]; an offset,
        # not slicing, keeps every read linear in the bytes it looks at.
        self._buf = bytearray(b"\r\n")
        self._pos = 0
        self._known = 0  # _buf[_pos:_known] is content, seen by _delimiter()
        self._delim = b"\r\n--" + boundary.encode("latin-1")
        self._in_part = False
        self._ended = False
        self._skip_to_delimiter()  # the preamble

    def _fill(self):
        data = self._body.read(SLICE)
        if not data:
            raise ValueError("multipart body: it ends before its closing delimiter")
        del self._buf[:self._pos]  # what was read already (offsets restart)
        self._pos = self._known = 0
        self._buf += data

    def _delimiter(self):
        """(i, safe), offsets into _buf: i where a delimiter starts (None if
        none is known yet); safe where the bytes that are surely content end.
        As in Go's reader (envd's), the boundary's text is a delimiter only
        when "--" or blanks and CRLF follow it; elsewhere it is content."""
        buf, delim = self._buf, self._delim
        start = self._pos
        while True:
            i = buf.find(delim, start)
            if i < 0:
                return None, max(self._pos, len(buf) - (len(delim) - 1))
            after = i + len(delim)
            if buf.startswith(b"--", after):
                return i, i
            k, end = after, min(len(buf), after + PADDING_MAX + 1)
            while k < end and buf[k] in b" \t":
                k += 1
            if k - after <= PADDING_MAX:
                if buf.startswith(b"\r\n", k):
                    return i, i
                if len(buf) - k < 2:  # what follows has not arrived yet
                    return None, i
            start = i + 1

    def _skip_to_delimiter(self):
        while True:
            i, safe = self._delimiter()
            if i is not None:
                self._pos = i + len(self._delim)
                return
            self._pos = safe
            self._fill()

    def read(self, n=SLICE):
        """Up to `n` bytes of the current part, b"" at its end."""
        if not self._in_part:
            return b""
        while True:
            if self._known <= self._pos:  # look again only past what was seen
                i, self._known = self._delimiter()
                if i == self._pos:
                    self._pos += len(self._delim)
                    self._in_part = False
                    return b""
            if self._known > self._pos:
                end = min(self._known, self._pos + n)
                out = bytes(self._buf[self._pos:end])
                self._pos = end
                return out
            self._fill()

    def next_part(self):
        """The next part's headers, past the rest of the current part; None
        after the closing delimiter."""
        while self._in_part:
            self.read()
        if self._ended:
            return None
        while len(self._buf) - self._pos < 2:
            self._fill()
        if self._buf.startswith(b"--", self._pos):
            self._ended = True
            return None
        # Transport padding (blanks), then CRLF: _delimiter() saw them.
        while self._buf[self._pos] in b" \t":
            self._pos += 1
        self._pos += 2
        while True:
            if self._buf.startswith(b"\r\n", self._pos):  # a part without headers
                end = self._pos - 2
                break
            end = self._buf.find(b"\r\n\r\n", self._pos, self._pos + HEADERS_MAX + 4)
            if end >= 0:
                break
            if len(self._buf) - self._pos > HEADERS_MAX:
                raise ValueError("multipart body: a part's headers over 16 KiB")
            self._fill()
        raw = bytes(self._buf[self._pos:end + 2])
        self._pos = end + 4
        self._in_part = True
        return email.parser.BytesHeaderParser(policy=email.policy.HTTP).parsebytes(raw + b"\r\n")
