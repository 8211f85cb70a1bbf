"""The upload_url() server's body readers (client/python/cellvm/upload_body.py),
fed the bytes a client sends in slices of every size: a Content-Length or
chunked body, and multipart/form-data parts read as they arrive, with
delimiter-like bytes inside a file and across slices. A body that ends early
or breaks the format raises ValueError. (The server over a real agent is
tests/test_sdk_e2b_api.py's download/upload URL test.)"""

import io
import os
import random

import pytest

from cellvm.upload_body import Body, Multipart


class Trickle(io.RawIOBase):
    """A socket's file: at most `step` bytes a read, so every boundary falls
    at every place in turn."""

    def __init__(self, data, step):
        self._data, self._pos, self._step = data, 0, step

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), self._step, len(self._data) - self._pos)
        b[:n] = self._data[self._pos:self._pos + n]
        self._pos += n
        return n


def rfile(data, step):
    return io.BufferedReader(Trickle(data, step), buffer_size=max(step, 8))


def read_all(reader, n):
    out = []
    while True:
        data = reader.read(n)
        if not data:
            return b"".join(out)
        out.append(data)


def chunked(data, sizes):
    out, pos, i = [], 0, 0
    while pos < len(data):
        k = sizes[i % len(sizes)]
        out.append(b"%x;ext=1\r\n%s\r\n" % (k, data[pos:pos + k]) if i % 2 else
                   b"%X\r\n%s\r\n" % (len(data[pos:pos + k]), data[pos:pos + k]))
        pos, i = pos + k, i + 1
    return b"".join(out) + b"0\r\nX-Trailer: t\r\n\r\n"


def form(boundary, parts, preamble=b"", padding=b""):
    out = [preamble]
    for name, data in parts:
        out.append(b"--" + boundary + padding + b"\r\nContent-Disposition: form-data; name=\"file\"; "
                   b"filename=\"" + name + b"\"\r\nContent-Type: application/octet-stream\r\n\r\n")
        out.append(data + b"\r\n")
    out.append(b"--" + boundary + b"--\r\nepilogue")
    return b"".join(out)


def parts_of(body, boundary, n):
    mp = Multipart(body, boundary)
    got = []
    while (h := mp.next_part()) is not None:
        got.append((h.get_filename(), read_all(mp, n)))
    return got


@pytest.mark.parametrize("step", [1, 7, 4096, 1 << 20])
def test_length_and_chunked_bodies_read_whole_and_no_further(step):
    data = os.urandom(200_000)
    body = Body(rfile(data + b"NEXT REQUEST", step), len(data))
    assert read_all(body, 65536) == data and body.read() == b""
    body = Body(rfile(chunked(data, [1, 5000, 70000, 3]) + b"NEXT", step), chunked=True)
    assert read_all(body, 8192) == data
    assert Body(rfile(b"0\r\n\r\n", step), chunked=True).read() == b""


@pytest.mark.parametrize("bad, why", [
    (b"zz\r\nabc\r\n0\r\n\r\n", "not hex"),
    (b"3\r\nabcXY0\r\n\r\n", "CRLF"),
    (b"A" * 2000 + b"\r\n", "over 1 KiB"),
    (b"10\r\nshort", "ended"),
    (b"0\r\n" + b"T: x\r\n" * 100 + b"\r\n", "trailer"),
], ids=["not-hex", "no-crlf", "long-line", "cut-short", "many-trailers"])
def test_broken_chunked_bodies_raise(bad, why):
    with pytest.raises(ValueError, match=why):
        read_all(Body(rfile(bad, 3), chunked=True), 100)


def test_a_body_cut_short_raises():
    with pytest.raises(ValueError, match="ended"):
        read_all(Body(rfile(b"x" * 10, 4), 20), 100)


@pytest.mark.parametrize("step", [1, 3, 61, 4096, 1 << 20])
@pytest.mark.parametrize("n", [1, 5, 65536])
def test_multipart_parts_stream_with_delimiter_like_bytes(step, n):
    boundary = b"----cellvm-bnd-42"
    rng = random.Random(step * 31 + n)
    pieces = [b"\r\n", b"\r\n--", b"\r\n------cellvm-bnd-4", b"--"]
    tricky = b"".join(rng.choice(pieces + [b"x" * rng.randrange(50)]) for _ in range(400))
    big = os.urandom(300_000)
    files = [(b"a.bin", tricky), (b"empty.txt", b""), (b"big.bin", big),
             (b"c.txt", b"\r\n------cellvm-bnd-42X not a delimiter\r\n")]
    data = form(boundary, files, preamble=b"preamble to skip\r\n", padding=b" \t")
    got = parts_of(Body(rfile(data, step), len(data)), boundary.decode(), n)
    assert got == [(name.decode(), content) for name, content in files]


def test_multipart_part_read_in_part_then_next_skips_its_rest():
    data = form(b"b", [(b"one", b"1" * 100_000), (b"two", b"2")])
    mp = Multipart(Body(rfile(data, 999), len(data)), "b")
    assert mp.next_part().get_filename() == "one" and mp.read(10) == b"1" * 10
    h = mp.next_part()
    assert h.get_filename() == "two" and read_all(mp, 5) == b"2"
    assert mp.next_part() is None and mp.next_part() is None


@pytest.mark.parametrize("data, why", [
    (b"--b\r\nContent-Disposition: form-data; filename=\"f\"\r\n\r\nno end", "closing delimiter"),
    (b"no delimiter at all", "closing delimiter"),
    (b"--bX\r\n\r\n", "closing delimiter"),
    (b"--b\r\n" + b"H: " + b"v" * 20000 + b"\r\n\r\nx\r\n--b--", "16 KiB"),
], ids=["no-closing", "no-delimiter", "boundary-then-text", "long-headers"])
def test_broken_multipart_bodies_raise(data, why):
    with pytest.raises(ValueError, match=why):
        parts_of(Body(rfile(data, 50), len(data)), "b", 100)


def test_boundary_text_not_followed_by_crlf_or_dashes_is_no_delimiter():
    # Go's reader (envd's) reads it so: over 1 KiB of blanks, or other text,
    # after the boundary's text make it content (here, the preamble's).
    for head in (b"--b" + b" " * 2000 + b"\r\n", b"--bjunk\r\n"):
        data = head + b"\r\nx\r\n--b--"
        assert parts_of(Body(rfile(data, 50), len(data)), "b", 100) == []
    data = b"--b  \t\r\n\r\nno headers\r\n\r\nbut lines\r\n--b--"
    assert parts_of(Body(rfile(data, 1), len(data)), "b", 100) == [(None, b"no headers\r\n\r\nbut lines")]


def test_a_boundary_must_be_given_and_short():
    for boundary in ("", "x" * 71):
        with pytest.raises(ValueError, match="boundary"):
            Multipart(Body(rfile(b"", 1), 0), boundary)
