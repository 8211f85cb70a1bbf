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
        # delimiter the same.
        self._buf = b"\r\n"
        self._delim = b"\r\n--" + boundary.encode("latin-1")
        self._in_part = False
        self._ended = False
        self._skip_to_delimiter()  # the preamble

    def _fill(self):
        data = self._body.read(SLICE)
        if not data:
            raise ValueError("multipart body: it ends before its closing delimiter")
        self._buf += data

    def _delimiter(self):
        """(i, safe): i where a delimiter starts in the buffer (None if none is
        known yet); safe how many bytes before it are surely content. As in Go's
        reader (envd's), the boundary's text is a delimiter only when "--" or
        blanks and CRLF follow it; elsewhere it is content."""
        start = 0
        while True:
            i = self._buf.find(self._delim, start)
            if i < 0:
                return None, max(0, len(self._buf) - (len(self._delim) - 1))
            rest = self._buf[i + len(self._delim):]
            if rest.startswith(b"--"):
                return i, i
            stripped = rest.lstrip(b" \t")
            if len(rest) - len(stripped) <= PADDING_MAX:
                if stripped.startswith(b"\r\n"):
                    return i, i
                if len(stripped) < 2:  # what follows has not arrived yet
                    return None, i
            start = i + 1

    def _skip_to_delimiter(self):
        while True:
            i, safe = self._delimiter()
            if i is not None:
                self._buf = self._buf[i + len(self._delim):]
                return
            self._buf = self._buf[safe:]
            self._fill()

    def read(self, n=SLICE):
        """Up to `n` bytes of the current part, b"" at its end."""
        if not self._in_part:
            return b""
        while True:
            i, safe = self._delimiter()
            if i == 0:
                self._buf = self._buf[len(self._delim):]
                self._in_part = False
                return b""
            if safe > 0:
                k = min(safe, n)
                out, self._buf = self._buf[:k], self._buf[k:]
                return out
            self._fill()

    def next_part(self):
        """The next part's headers, past the rest of the current part; None
        after the closing delimiter."""
        while self._in_part:
            self.read()
        if self._ended:
            return None
        while len(self._buf) < 2:
            self._fill()
        if self._buf.startswith(b"--"):
            self._ended = True
            return None
        # Transport padding (blanks), then CRLF: _delimiter() saw them.
        self._buf = self._buf.lstrip(b" \t")[2:]
        while True:
            if self._buf.startswith(b"\r\n"):  # a part without headers
                end = -2
                break
            end = self._buf.find(b"\r\n\r\n", 0, HEADERS_MAX + 4)
            if end >= 0:
                break
            if len(self._buf) > HEADERS_MAX:
                raise ValueError("multipart body: a part's headers over 16 KiB")
            self._fill()
        raw, self._buf = self._buf[:end + 2], self._buf[end + 4:]
        self._in_part = True
        return email.parser.BytesHeaderParser(policy=email.policy.HTTP).parsebytes(raw + b"\r\n")
