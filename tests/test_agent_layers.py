"""No module circle among the agent's files (docs/ARCHITECTURE.md: loop <
conn < listen, svc, execution < spawner < vmfork < zygote < context < the
services < requests < main, each calling only into the layers below it).
The graph is the linker's: module X uses module Y when agent/X.o has an
undefined symbol that agent/Y.o defines (`nm`), so a call, a global's use
or a function address taken all count; a pointer a higher layer registers
at startup does not (that is the point of registering). No VM, no agent.
"""

import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from agent_process import BUILD  # noqa: E402
from test_sdk_import_circles import circles  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENT_SRC = os.path.join(ROOT, "agent")


def agent_objects():
    """BUILD's agent/*.o, one per agent/*.c, brought up to date by make (a
    no-op after tests/run's build); the SAN build dir with its own flags."""
    if shutil.which("make") is None or shutil.which("nm") is None:
        pytest.skip("needs make and nm (binutils) to build and read the agent's objects")
    build = os.path.relpath(BUILD, ROOT)
    mods = sorted(f[:-2] for f in os.listdir(AGENT_SRC) if f.endswith(".c"))
    objs = [os.path.join(build, "agent", m + ".o") for m in mods]
    flags = ["SAN=1"] if build == os.path.join("build", "san") else [f"B={build}"]
    r = subprocess.run(["make", "-s", "-C", ROOT, *flags, *objs], capture_output=True, text=True)
    assert r.returncode == 0, "make of the agent's objects failed:\n" + r.stderr[-4000:]
    return {m: os.path.join(ROOT, o) for m, o in zip(mods, objs)}


def symbol_tables(objs):
    """{module: (defined global symbols, undefined symbols)} from one `nm -A -P`."""
    by_path = {path: m for m, path in objs.items()}
    r = subprocess.run(["nm", "-A", "-P", *objs.values()], capture_output=True, text=True,
                       check=True)
    tables = {m: (set(), set()) for m in objs}
    for line in r.stdout.splitlines():
        # "build/agent/loop.o: loop_run T 0000000000000120 0000000000000042"
        parts = line.split()
        if len(parts) < 3 or not parts[0].endswith(":"):
            continue
        defined, undefined = tables[by_path[parts[0][:-1]]]
        name, kind = parts[1], parts[2]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper():  # lowercase: static, the module's own
            defined.add(name)
    return tables


def use_graph(tables):
    """{module: {module it uses: the symbols it uses of it}}."""
    owner = {}
    for m, (defined, _) in tables.items():
        for name in defined:
            owner[name] = m
    graph = {m: {} for m in tables}
    for m, (_, undefined) in tables.items():
        for name in undefined:
            o = owner.get(name)
            if o is not None and o != m:
                graph[m].setdefault(o, set()).add(name)
    return graph


def one_cycle(graph, comp):
    """The shortest way from the first module of `comp` (a circle, circles())
    back to it, with a few symbols of each step: what to show of a circle."""
    start, inside = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    for v in queue:
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path = path[::-1] + [start]
                return " -> ".join(f"{x} ({', '.join(sorted(graph[x][y])[:3])})"
                                   for x, y in zip(path, path[1:])) + f" -> {start}"
            if w in inside and w not in prev:
                prev[w] = v
                queue.append(w)
    return " <-> ".join(comp)  # not a circle after all: named as found


def test_the_checker_finds_a_circle_and_names_its_symbols():
    tables = {"loop": ({"loop_run"}, {"requests_handle"}),
              "requests": ({"requests_handle"}, {"loop_run", "free"}),
              "main": (set(), {"loop_run", "requests_handle"})}
    graph = use_graph(tables)
    assert graph == {"loop": {"requests": {"requests_handle"}},
                     "requests": {"loop": {"loop_run"}},
                     "main": {"loop": {"loop_run"}, "requests": {"requests_handle"}}}
    assert circles({m: set(g) for m, g in graph.items()}) == [["loop", "requests"]]
    assert one_cycle(graph, ["loop", "requests"]) == \
        "loop (requests_handle) -> requests (loop_run) -> loop"


def test_no_module_circle_in_the_agent():
    objs = agent_objects()
    graph = use_graph(symbol_tables(objs))
    # It read the objects: the dispatcher's known uses are there.
    assert len(graph) == len(objs) > 20
    assert {"conn", "context"} <= set(graph["requests"]) and "loop" in graph["conn"]
    found = circles({m: set(g) for m, g in graph.items()})
    assert found == [], "module circles in agent/ (docs/ARCHITECTURE.md's layers):\n" + "\n".join(
        f"{', '.join(comp)}; one way round: {one_cycle(graph, comp)}" for comp in found)
