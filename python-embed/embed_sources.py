"""Writes a C file embedding Python modules: embed_sources.py OUT.c NAME=PATH...

PATH is a module's file, or a package's directory: NAME is then its
__init__.py, NAME.x its x.py, and its subpackages likewise. Each module is
embedded as its source and as its code object compiled by this Python (the
one whose libpython the executor links, build.mk), marshalled, so the
executor imports it without compiling it. Its code's file name is
"<cellvm NAME>" for a file, "<cellvm DIR/x.py>" for a package's module
(DIR the directory's own name: "<cellvm kernel/iostream.py>"). A missing
file embeds an empty module (the kernel then falls back).
"""
import importlib.util
import marshal
import os
import sys


def c_array(data):
    return ",".join(str(b) for b in data)


def modules(name, path, top=None):
    """(module name, file, code's file name) of NAME=PATH."""
    if not os.path.isdir(path):
        return [(name, path, f"<cellvm {name}>")]
    top = top or os.path.dirname(os.path.normpath(path))
    label = lambda f: f"<cellvm {os.path.relpath(f, top)}>"  # noqa: E731
    init = os.path.join(path, "__init__.py")
    out = [(name, init, label(init))]
    for entry in sorted(os.listdir(path)):
        full = os.path.join(path, entry)
        if entry.endswith(".py") and entry != "__init__.py":
            out.append((f"{name}.{entry[:-3]}", full, label(full)))
        elif os.path.isfile(os.path.join(full, "__init__.py")):
            out += modules(f"{name}.{entry}", full, top)
    return out


def main(out, pairs):
    lines = ['#include "embedded_py.h"', ""]
    table = []
    embedded = [m for pair in pairs for m in modules(*pair.split("=", 1))]
    for i, (name, path, filename) in enumerate(embedded):
        data = open(path, "rb").read() if os.path.exists(path) else b""
        source = data.decode("utf-8")  # fail the build on a non-UTF-8 source
        code = marshal.dumps(compile(source, filename, "exec", dont_inherit=True)) if data else b""
        lines.append(f"static const char src_{i}[] = {{{c_array(data + bytes(1))}}};")
        lines.append(f"static const char code_{i}[] = {{{c_array(code + bytes(1))}}};")
        table.append(f'        {{"{name}", "{filename}", src_{i}, {len(data)}u, code_{i}, {len(code)}u}},')
    lines.append("const struct embedded_py embedded_py_sources[] = {")
    lines += table
    lines.append("        {NULL, NULL, NULL, 0, NULL, 0},")
    lines.append("};")
    lines.append(f"const char embedded_py_magic[4] = {{{c_array(importlib.util.MAGIC_NUMBER)}}};")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
