"""pip in the guest as agents type it (docs/IMAGE.md, "pip"): `pip install x`
in a command, `!pip install x` and `%pip install x` in a cell, each followed
by `import x` in a context that was already running, with no network: the
packages are wheels made here and uploaded. Debian's "externally-managed"
refusal is gone from the image and pip, run by the sandbox user, installs
into ~/.local.

Each test runs in a clone of the session's template (conftest.vm_template):
its zygote started when the template was made, as root, before anything was
installed, as in every sandbox a user creates; the executors put the user
site on sys.path themselves (python-embed/kernel/usersite.py).
"""

import base64
import hashlib
import io
import os
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cellvm import Sandbox  # noqa: E402
import registry_view  # noqa: E402
from conftest import IMAGE, SNAPSHOT_MEMORY_MB  # noqa: E402

USER_SITE = "/home/user/.local/lib/python3.11/site-packages"


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    yield from registry_view.private_state(tmp_path, monkeypatch)


@pytest.fixture
def sbx(vm_template):
    s = Sandbox.create(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB, timeout=900, request_timeout=120)
    try:
        yield s
    finally:
        s.kill()


def wheel(name, value, script=None):
    """(file name, bytes) of a pure-Python wheel: package `name` with VALUE
    and main() printing it, and `script` as its console script."""
    dist = f"{name}-1.0"
    files = {
        f"{name}/__init__.py": f"VALUE = {value!r}\n\ndef main():\n    print(VALUE)\n",
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: cellvm-tests\n"
                                   "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if script:
        files[f"{dist}.dist-info/entry_points.txt"] = f"[console_scripts]\n{script} = {name}:main\n"
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    files[f"{dist}.dist-info/RECORD"] = "\n".join(record + [f"{dist}.dist-info/RECORD,,"]) + "\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, text in files.items():
            z.writestr(path, text)
    return f"{dist}-py3-none-any.whl", buf.getvalue()


def upload(sbx, name, value, script=None):
    fname, data = wheel(name, value, script)
    path = f"/tmp/{fname}"
    sbx.files.write(path, data)
    return path


def cell(sbx, code, context=None):
    ex = sbx.run_code(code, context=context, timeout=300)
    assert ex.error is None, f"{ex.error.name}: {ex.error.value}\n{ex.error.traceback}"
    return ex


def stdout(ex):
    return "".join(ex.logs.stdout)


def test_cells_run_with_the_users_home_site_and_path(sbx):
    """What pip and `import` rely on, in a context made after the restore and
    in the template's default context alike."""
    probe = ("import os, site, sys\n"
             "print(os.environ['HOME'], os.path.expanduser('~'), os.environ['USER'])\n"
             "print(site.ENABLE_USER_SITE, site.USER_SITE, site.USER_SITE in sys.path)\n"
             "print(sys.path.index(site.USER_SITE) < sys.path.index('/usr/lib/python3/dist-packages'))\n"
             "print(os.environ['PATH'].split(':')[0], os.environ['GIT_PAGER'])\n")
    want = ["/home/user /home/user user", f"True {USER_SITE} True", "True",
            "/home/user/.local/bin cat"]
    ctx = sbx.create_code_context()
    assert stdout(cell(sbx, probe, ctx)).splitlines() == want
    assert stdout(cell(sbx, probe)).splitlines() == want  # the default context


def test_pip_install_in_a_command_imports_in_a_running_context(sbx):
    ctx = sbx.create_code_context()
    missing = sbx.run_code("import cvm_probe_cmd", context=ctx, timeout=120)
    assert missing.error is not None and missing.error.name == "ModuleNotFoundError"
    whl = upload(sbx, "cvm_probe_cmd", "from a command", script="cvm-probe-cmd")
    r = sbx.commands.run(f"pip install --no-index {whl}", timeout=300)
    assert r.exit_code == 0
    assert "Successfully installed cvm-probe-cmd-1.0" in r.stdout, r.stdout + r.stderr
    assert "externally-managed" not in r.stdout + r.stderr
    # The context that was running (and had failed to import it) imports it now.
    ex = cell(sbx, "import cvm_probe_cmd\nprint(cvm_probe_cmd.VALUE)\nprint(cvm_probe_cmd.__file__)", ctx)
    assert stdout(ex).splitlines() == ["from a command", f"{USER_SITE}/cvm_probe_cmd/__init__.py"]
    # A new context, a python3 of a command, and the console script on PATH (~/.profile).
    ex = cell(sbx, "import cvm_probe_cmd\nprint(cvm_probe_cmd.VALUE)", sbx.create_code_context())
    assert stdout(ex) == "from a command\n"
    r = sbx.commands.run("python3 -c 'import cvm_probe_cmd; print(cvm_probe_cmd.VALUE)'; "
                         "command -v cvm-probe-cmd; cvm-probe-cmd", timeout=120)
    assert r.stdout.splitlines() == ["from a command", "/home/user/.local/bin/cvm-probe-cmd",
                                     "from a command"]
    r = sbx.commands.run("pip list --user --format=freeze", timeout=300)
    assert "cvm-probe-cmd==1.0" in r.stdout.split() or "cvm_probe_cmd==1.0" in r.stdout.split(), r.stdout


def test_bang_pip_install_then_import_in_the_same_cell(sbx):
    ctx = sbx.create_code_context()
    cell(sbx, "try:\n    import cvm_probe_bang\nexcept ImportError as e:\n    print(type(e).__name__)", ctx)
    whl = upload(sbx, "cvm_probe_bang", "from !pip", script="cvm-probe-bang")
    ex = cell(sbx, f"!pip install --no-index {whl}\n"
                   "import cvm_probe_bang\n"
                   "print('value:', cvm_probe_bang.VALUE, _exit_code)\n"
                   "!cvm-probe-bang", ctx)
    out = stdout(ex)
    assert "Successfully installed cvm-probe-bang-1.0" in out, out
    assert "externally-managed" not in out and "not on PATH" not in out, out
    assert "value: from !pip 0" in out, out
    assert out.rstrip().splitlines()[-1] == "from !pip"  # the script, from ~/.local/bin


def test_bang_pip_that_makes_the_user_site_imports_in_the_same_cell(sbx):
    """When the user site is gone as contexts start (removed here), the first
    `!pip install` makes it again: it joins sys.path, or (where it was
    already named there, missing) the import system forgets that it was
    missing. The first context takes the executor the zygote prepared ahead,
    before the removal; the second one prepared after it."""
    sbx.commands.run("rm -r /home/user/.local/lib", timeout=60)
    contexts = [sbx.create_code_context(), sbx.create_code_context()]
    for i, ctx in enumerate(contexts):
        name = f"cvm_probe_late{i}"
        ex = cell(sbx, f"try:\n    import {name}\nexcept ImportError as e:\n    print(type(e).__name__)", ctx)
        assert stdout(ex) == "ModuleNotFoundError\n"
        whl = upload(sbx, name, f"made the site {i}")
        ex = cell(sbx, f"!pip install -q --no-index {whl}\nimport {name}\nprint({name}.VALUE)", ctx)
        assert stdout(ex).rstrip().splitlines()[-1] == f"made the site {i}", stdout(ex)


def test_percent_pip_install_then_import(sbx):
    """In the template's default context (its executor was prepared before
    the snapshot), as a notebook does it: %pip in one cell, import in the next."""
    whl = upload(sbx, "cvm_probe_magic", "from %pip")
    ex = cell(sbx, f"%pip install --no-index {whl}")
    out = stdout(ex)
    assert "Successfully installed cvm-probe-magic-1.0" in out, out
    assert "Note: you may need to restart the kernel to use updated packages." in out
    ex = cell(sbx, "import cvm_probe_magic\nprint(cvm_probe_magic.VALUE)\nprint(cvm_probe_magic.__file__)")
    assert stdout(ex).splitlines() == ["from %pip", f"{USER_SITE}/cvm_probe_magic/__init__.py"]


def test_git_in_a_cell_needs_no_pager(sbx):
    """`!git log` runs on a terminal: with no PAGER git would try less (not
    in the image) and print an error first, as it would not in ipykernel."""
    ex = cell(sbx, "!cd /tmp && git init -q g && cd g && "
                   "git -c user.name=u -c user.email=u@example.com commit -q --allow-empty -m first && "
                   "git log --format=%s")
    assert stdout(ex).replace("\r\n", "\n") == "first\n"
