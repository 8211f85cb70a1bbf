"""`cellvm serve`'s files errors in envd's words, renames across the guest's
file systems, and a blank figure's chart, through E2B's own npm SDK
(tests/serve_sdk) and against cellvm's Python SDK.

- envd words some files errors itself (its download, upload, stat, list, move
  and mkdir handlers); cellvm's Python SDK maps the agent's errors to those
  words (client/python/cellvm/exceptions.py _E2B_FILE_MESSAGES) and serve does
  the same in C (client/c/serve_envd_words.c). Both tables are compared here,
  and every row's message through serve (E2B's npm SDK) against the Python
  SDK's for the same call, so they cannot drift.
- In the guest /tmp is a tmpfs of its own: a rename from /home/user to /tmp
  crosses file systems (EXDEV), where E2B has one root file system; the agent
  then does what mv does (agent/files.c move_across).
- A figure without data: E2B's kernel sends `e2b/chart: {}` (e2b_charts
  chart_figure_to_dict), its server keeps it and its JS SDK gives
  `result.chart` {}; the Python SDKs read it as None.

Needs Node with tests/serve_sdk's packages and build/image, as test_serve_sdk.py.
"""

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import build_image_or_skip  # noqa: E402
from serve_process import CLI, node_with_packages_or_skip, serving  # noqa: E402

SDK_DIR = os.path.join(ROOT, "tests", "serve_sdk")
WORDS_C = os.path.join(ROOT, "client", "c", "serve_envd_words.c")
BASE = "/home/user/words"  # the rows' directory in the sandbox

# (op, errno) of _E2B_FILE_MESSAGES -> the call, on a directory holding the file
# f.txt and the directory d: (JS SDK call, Python SDK call, the path(s) named).
ROWS = {
    ("read", "ENOENT"): ("files.read(B + '/missing/x')", lambda f, b: f.read(b + "/missing/x")),
    ("read", "EISDIR"): ("files.read(B + '/d')", lambda f, b: f.read(b + "/d")),
    ("write", "EISDIR"): ("files.write(B + '/d', 'x')", lambda f, b: f.write(b + "/d", "x")),
    ("stat", "ENOENT"): ("files.getInfo(B + '/missing')", lambda f, b: f.get_info(b + "/missing")),
    ("list", "ENOENT"): ("files.list(B + '/missing')", lambda f, b: f.list(b + "/missing")),
    ("list", "ENOTDIR"): ("files.list(B + '/f.txt')", lambda f, b: f.list(b + "/f.txt")),
    ("rename", "ENOENT"): ("files.rename(B + '/missing', B + '/other')",
                           lambda f, b: f.rename(b + "/missing", b + "/other")),
    ("make_dir", "EEXIST"): ("files.makeDir(B + '/f.txt')", lambda f, b: f.make_dir(b + "/f.txt")),
}


def _script():
    rows = "\n".join(f"  out.rows[{json.dumps(op + ' ' + err)}] = await err(() => sbx.{call})"
                     for (op, err), (call, _) in ROWS.items())
    return f"""
import {{ Sandbox }} from '@e2b/code-interpreter'
const out = {{ rows: {{}} }}
const B = {json.dumps(BASE)}
const err = async (f) => {{
  try {{ await f(); return null }} catch (e) {{ return {{ name: e.name, message: e.message }} }}
}}
const sh = async (cmd) => (await sbx.commands.run(cmd)).stdout
const sbx = await Sandbox.create()
try {{
  await sbx.files.write(B + '/f.txt', 'x')
  await sbx.files.makeDir(B + '/d')
{rows}
  // renames from /home/user (the root file system) to /tmp (a tmpfs) and back
  await sbx.files.write(B + '/x.txt', 'hello')
  out.file = await err(() => sbx.files.rename(B + '/x.txt', '/tmp/x.txt'))
  out.fileRead = await sbx.files.read('/tmp/x.txt')
  out.fileSourceLeft = await sbx.files.exists(B + '/x.txt')
  await sh(`mkdir -p ${{B}}/tree/sub && echo a > ${{B}}/tree/sub/a && chmod 750 ${{B}}/tree/sub/a` +
           ` && ln -s sub/a ${{B}}/tree/link && touch -d 2001-02-03T00:00:00Z ${{B}}/tree/sub/a`)
  out.tree = await err(() => sbx.files.rename(B + '/tree', '/tmp/tree'))
  out.treeEntry = await sbx.files.getInfo('/tmp/tree').then((e) => ({{ type: e.type, path: e.path }}))
  out.treeShown = await sh('cd /tmp/tree && find . | sort && stat -c "%n %a %U %Y" sub/a' +
                           ' && readlink link && cat link && ls -A ' + B)
  await sbx.files.write('/tmp/y.txt', 'old')
  await sbx.files.write(B + '/y.txt', 'new')
  out.over = await err(() => sbx.files.rename(B + '/y.txt', '/tmp/y.txt'))
  out.overRead = await sbx.files.read('/tmp/y.txt')
  out.back = await err(() => sbx.files.rename('/tmp/tree', B + '/tree2'))
  out.backShown = await sh('find ' + B + '/tree2 | sort && ls -A /tmp ' + B)
  // a directory onto a non-empty one: fails, both left as they were
  await sh(`mkdir -p ${{B}}/t3/s /tmp/full/keep && echo z > ${{B}}/t3/s/z`)
  out.notEmpty = await err(() => sbx.files.rename(B + '/t3', '/tmp/full'))
  out.notEmptyShown = await sh(`find ${{B}}/t3 /tmp/full | sort`)
  // figures
  const blank = await sbx.runCode('import matplotlib.pyplot as plt\\nfig, ax = plt.subplots()\\nplt.show()')
  out.blank = blank.results.map((r) => ({{ chart: r.chart, png: !!r.png }}))
  const line = await sbx.runCode('fig, ax = plt.subplots()\\nax.plot([1, 2])\\nplt.show()')
  out.line = line.results.map((r) => r.chart?.type)
}} finally {{
  await sbx.kill()
}}
console.log(JSON.stringify(out))
"""


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    """What E2B's npm SDK sees through `cellvm serve` (one sandbox)."""
    node = node_with_packages_or_skip(SDK_DIR, os.path.join("@e2b", "code-interpreter"),
                                      (20, 18, 1), "E2B's npm SDK (e2b 2.5x)")
    build_image_or_skip()
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"{CLI} is not built (make all)")
    for s in serving(str(tmp_path_factory.mktemp("serve-words"))):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
               "LANG": "C.UTF-8", "E2B_API_URL": s.url, "E2B_SANDBOX_URL": s.url,
               "E2B_API_KEY": s.key}
        r = subprocess.run([node, "--input-type=module", "-e", _script()], cwd=SDK_DIR, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        yield json.loads(r.stdout.strip().splitlines()[-1])


def test_the_c_table_is_the_python_sdks():
    from cellvm.exceptions import _E2B_FILE_MESSAGES
    with open(WORDS_C) as f:
        src = f.read()
    rows = {(op, err): text for op, err, text in
            re.findall(r'\{"(\w+)", "(E[A-Z0-9]+)",\s*"((?:[^"\\]|\\.)*)"\}', src)}
    assert rows == _E2B_FILE_MESSAGES
    assert set(ROWS) == set(_E2B_FILE_MESSAGES), "a row of the table has no call here"


def _python_message(sbx, base, call):
    from cellvm import SandboxException
    with pytest.raises(SandboxException) as ei:
        call(sbx.files, base)
    return str(ei.value)


@pytest.mark.parametrize("row", list(ROWS), ids=lambda r: "-".join(r))
def test_serve_words_a_row_as_the_python_sdk(observed, sbx, workdir, row):
    """The same call on the same layout: serve's message (E2B's JS SDK puts
    "[code] " before a Connect error's) is the Python SDK's, paths aside,
    and is envd's text, not the agent's."""
    os.makedirs(os.path.join(workdir, "d"), exist_ok=True)
    with open(os.path.join(workdir, "f.txt"), "w") as f:
        f.write("x")
    py = _python_message(sbx, workdir, ROWS[row][1]).replace(workdir, "<B>")
    got = observed["rows"][" ".join(row)]
    assert got is not None, f"{row}: no error through serve"
    js = re.sub(r"^\[[a-z_]+\] ", "", got["message"]).replace(BASE, "<B>")
    assert js == py
    assert f"({row[1]})" not in js


def test_renames_across_file_systems(observed):
    o = observed
    assert o["file"] is None and o["fileRead"] == "hello" and o["fileSourceLeft"] is False
    assert o["tree"] is None, o["tree"]
    assert o["treeEntry"] == {"type": "dir", "path": "/tmp/tree"}
    # entries, mode, owner and mtime kept; the symlink a symlink; the source gone
    assert o["treeShown"].split("\n") == [
        ".", "./link", "./sub", "./sub/a", "sub/a 750 user 981158400", "sub/a", "a",
        "d", "f.txt", ""]
    assert o["over"] is None and o["overRead"] == "new"  # replaces a file, as rename(2)
    assert o["back"] is None, o["back"]
    shown = o["backShown"].split("\n")
    assert shown[:4] == [f"{BASE}/tree2", f"{BASE}/tree2/link", f"{BASE}/tree2/sub",
                         f"{BASE}/tree2/sub/a"]
    assert "tree" not in shown and not any(".cellvm-" in x for x in shown), shown
    # a failed one leaves no partial copy, and the source
    assert o["notEmpty"] is not None and "EXDEV" in o["notEmpty"]["message"], o["notEmpty"]
    assert o["notEmptyShown"].split("\n") == [
        f"{BASE}/t3", f"{BASE}/t3/s", f"{BASE}/t3/s/z", "/tmp/full", "/tmp/full/keep", ""]


def test_a_blank_figures_chart_is_empty(observed, sbx, ctx):
    assert observed["blank"] == [{"chart": {}, "png": True}]
    assert observed["line"] == ["line"]
    ex = sbx.run_code("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nplt.show()",
                      context=ctx)
    (r,) = ex.results
    assert r.png and r.chart is None and "chart" not in r.formats()
    assert "e2b/chart" not in r.raw


def test_rename_across_file_systems_on_a_dev_agent(sbx, workdir):
    """The same fallback on the host's agent (its workdir and /dev/shm are
    different file systems on most hosts); under build/san with CELLVM_BUILD."""
    shm = "/dev/shm"
    if not os.path.isdir(shm) or os.stat(shm).st_dev == os.stat(workdir).st_dev:
        pytest.skip("no second file system beside the workdir")
    import shutil
    import uuid
    far = os.path.join(shm, f"cellvm-words-{uuid.uuid4().hex[:8]}")
    tree = os.path.join(workdir, "tree")
    try:
        os.makedirs(os.path.join(tree, "sub"))
        with open(os.path.join(tree, "sub", "a"), "w") as f:
            f.write("a")
        os.chmod(os.path.join(tree, "sub", "a"), 0o640)
        os.symlink("sub/a", os.path.join(tree, "link"))
        os.utime(os.path.join(tree, "sub", "a"), (981158400, 981158400))
        st = os.stat(workdir)  # all the sandbox user's, as the agent acts as that user
        for p in (tree, os.path.join(tree, "sub"), os.path.join(tree, "sub", "a"),
                  os.path.join(tree, "link")):
            os.lchown(p, st.st_uid, st.st_gid)
        sbx.files.write(os.path.join(workdir, "x.txt"), "hello")
        e = sbx.files.rename(os.path.join(workdir, "x.txt"), far + ".txt")
        assert e.path == far + ".txt" and sbx.files.read(far + ".txt") == "hello"
        assert not os.path.exists(os.path.join(workdir, "x.txt"))
        sbx.files.rename(tree, far)
        assert not os.path.exists(tree)
        st = os.stat(os.path.join(far, "sub", "a"))
        assert (st.st_mode & 0o7777, int(st.st_mtime)) == (0o640, 981158400)
        assert os.readlink(os.path.join(far, "link")) == "sub/a"
        sbx.files.rename(far, tree)  # and back
        assert sorted(os.listdir(tree)) == ["link", "sub"] and not os.path.exists(far)
        assert not [n for n in os.listdir(shm) if ".cellvm-" in n]
    finally:
        shutil.rmtree(far, ignore_errors=True)
        if os.path.exists(far + ".txt"):
            os.unlink(far + ".txt")
