"""Writes a C file embedding Python sources: embed_sources.py OUT.c NAME=PATH...

PATH is a module's file, or a package's directory: NAME is then its
__init__.py, NAME.x its x.py, and its subpackages likewise. A missing file
embeds an empty source (the kernel then falls back).
"""
import os
import sys


def c_array(data):
    return ",".join(str(b) for b in data)


def modules(name, path):
    """(module name, file) of NAME=PATH."""
    if not os.path.isdir(path):
        return [(name, path)]
    out = [(name, os.path.join(path, "__init__.py"))]
    for entry in sorted(os.listdir(path)):
        full = os.path.join(path, entry)
        if entry.endswith(".py") and entry != "__init__.py":
            out.append((f"{name}.{entry[:-3]}", full))
        elif os.path.isfile(os.path.join(full, "__init__.py")):
            out += modules(f"{name}.{entry}", full)
    return out


def main(out, pairs):
    lines = ['#include "embedded_py.h"', ""]
    table = []
    embedded = [m for pair in pairs for m in modules(*pair.split("=", 1))]
    for i, (name, path) in enumerate(embedded):
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
