"""Writes a C file embedding Python sources: embed_sources.py OUT.c NAME=FILE...

A missing FILE embeds an empty source (the kernel then falls back).
"""
import os
import sys


def c_array(data):
    return ",".join(str(b) for b in data)


def main(out, pairs):
    lines = ['#include "embedded_py.h"', ""]
    table = []
    for i, pair in enumerate(pairs):
        name, path = pair.split("=", 1)
        data = open(path, "rb").read() if os.path.exists(path) else b""
        data.decode("utf-8")  # fail the build on a non-UTF-8 source
        body = c_array(data + bytes(1))
        lines.append(f"static const char src_{i}[] = {{{body}}};")
        table.append(f'        {{"{name}", src_{i}, {len(data)}u}},')
    lines.append("const struct embedded_py embedded_py_sources[] = {")
    lines += table
    lines.append("        {NULL, NULL, 0},")
    lines.append("};")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
