"""The wire constants have one source, protocol/msgtypes.h (docs/PROTOCOL.md):
every copy of a message type or frame flag in another language must carry
the value the header gives it. The copies are the ones the agent's peers
need at run time without the C headers: the Python SDK, the executor's
Python and bash kernels, the Node driver, and the executor A/B bench.
"""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COPIES = [
    "client/python/cellvm/_wire.py",
    "client/python/cellvm/commands.py",
    "client/python/cellvm/files.py",
    "python-embed/kernel/session.py",
    "python-embed/bash_kernel.py",
    "node-executor/driver.js",
    "bench/executor_ab.py",
]

HEX = r"0x[0-9A-Fa-f]+"


def header_constants():
    text = open(os.path.join(ROOT, "protocol/msgtypes.h")).read()
    text += open(os.path.join(ROOT, "protocol/frame.h")).read()
    out = {m.group(1): int(m.group(2), 16)
           for m in re.finditer(rf"\bCV_MSG_([A-Z0-9_]+)\s*=\s*({HEX})", text)}
    out.update({f"FLAG_{m.group(1)}": int(m.group(2).rstrip("uU"), 16)
                for m in re.finditer(rf"#define\s+CV_FLAG_([A-Z0-9_]+)\s+({HEX})u?", text)})
    return out


def copied_constants(path):
    """(name, value) of each constant a copy assigns: `A = 0x..`, `A, B = 0x.., 0x..`
    (Python) and `A: 0x..,` (a JavaScript object)."""
    found = []
    for line in open(os.path.join(ROOT, path)):
        code = line.split("#")[0] if path.endswith(".py") else line.split("//")[0]
        m = re.match(rf"\s*([A-Z][A-Z0-9_]*(?:\s*,\s*[A-Z][A-Z0-9_]*)*)\s*=\s*({HEX}(?:\s*,\s*{HEX})*)\s*$", code)
        if m:
            names = [n.strip() for n in m.group(1).split(",")]
            values = [int(v, 16) for v in m.group(2).split(",")]
            assert len(names) == len(values), (path, line)
            found += zip(names, values)
            continue
        m = re.match(rf"\s*([A-Z][A-Z0-9_]*)\s*:\s*({HEX})\s*,?\s*$", code)
        if m:
            found.append((m.group(1), int(m.group(2), 16)))
    return found


def test_the_header_is_read():
    h = header_constants()
    assert h["HELLO"] == 0x0001 and h["OK"] == 0x8000 and h["FLAG_MORE"] == 0x0001
    assert len(h) > 40, h


@pytest.mark.parametrize("path", COPIES)
def test_every_copy_matches_msgtypes_h(path):
    h = header_constants()
    found = copied_constants(path)
    assert len(found) >= 4, f"{path}: the constants were not found (did the copy's form change?)"
    wrong = [(n, hex(v), hex(h[n]) if n in h else "not in msgtypes.h")
             for n, v in found if h.get(n) != v]
    assert not wrong, f"{path} disagrees with protocol/msgtypes.h: {wrong}"
