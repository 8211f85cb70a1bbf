"""No import circle among the Python SDK's modules (issue 22): every
`import` of client/python/cellvm/*.py counts, those inside functions too
(a function-level import hides a circle from Python, not from the design).
No VM, no agent: the sources parsed with `ast`.
"""

import ast
import os

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "client",
                   "python", "cellvm")


def imports_of(source, modules):
    """The package's modules that `source` imports (relative or as cellvm.X)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[1] for a in node.names
                             if a.name.startswith("cellvm.") and len(a.name.split(".")) > 1)
            continue
        parts = (node.module or "").split(".")
        if node.level == 1 or (node.level == 0 and parts[0] == "cellvm"):
            tail = parts if node.level == 1 else parts[1:]
            if tail and tail[0]:
                found.add(tail[0])
            else:  # from . import a, b
                found.update(a.name for a in node.names)
    return found & modules


def import_graph(pkg):
    modules = {f[:-3] for f in os.listdir(pkg) if f.endswith(".py")}
    graph = {}
    for m in modules:
        with open(os.path.join(pkg, m + ".py"), encoding="utf-8") as f:
            graph[m] = imports_of(f.read(), modules) - {m}
    return graph


def circles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_sees_top_level_and_function_level_imports():
    mods = {"a", "b", "c", "d"}
    assert imports_of("from . import a, b as x\nimport os\n", mods) == {"a", "b"}
    assert imports_of("def f():\n    from .c import y\n    import cellvm.d\n", mods) == {"c", "d"}
    assert imports_of("from cellvm.a import z\nfrom cellvm import b\n", mods) == {"a", "b"}
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_in_the_python_sdk():
    graph = import_graph(PKG)
    assert len(graph) > 20 and "sandbox" in graph  # it read the package
    assert circles(graph) == []
