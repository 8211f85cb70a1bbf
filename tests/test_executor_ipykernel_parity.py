"""text/plain reprs and error name/value pairs compared with a real ipykernel."""

import queue

import pytest

from test_executor_harness import ex, zygote  # noqa: F401

jupyter_client = pytest.importorskip("jupyter_client")

CASES = [
    "1+1",
    "'text'",
    "[1, 'a', None, 2.5]",
    "{'b': 1, 'a': [1, 2, 3]}",
    "list(range(100))",
    "import numpy as np; np.arange(12).reshape(3, 4)",
    "import pandas as pd; pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})",
    "import pandas as pd; pd.Series([1.5, 2.5], name='s')",
    "class A: pass\nA",
    "{1, 2, 3}",
    "1/0",
    "int('x')",
    "[][1]",
    "{}['k']",
    "undefined_name",
    "raise RuntimeError('custom message')",
    "import sys; sys.exit(2)",
    "import nosuchmodule_xyz",
    # builtins whose text/plain the executor takes from repr() without the pretty printer
    "3.14", "-0.0", "1e300", "float('nan')", "True", "1+2j", "2**100",
    "b'by\\x00tes'", "'a\\nb\\u2028c\\x85'", "'x' * 100", "range(3)", "frozenset()",
    "(1,)", "[(1, 2)] * 30",
]


@pytest.fixture(scope="module")
def kernel():
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def ipykernel_run(kc, code):
    # stop_on_error=False: after an error ipykernel may abort the next request
    # (its abort window outlives the reply on a loaded host), which then has
    # neither a result nor an error.
    msg_id = kc.execute(code, stop_on_error=False)
    out = {"result": None, "error": None}
    while True:
        msg = kc.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = msg["msg_type"], msg["content"]
        if t == "execute_result":
            out["result"] = c["data"].get("text/plain")
        elif t == "error":
            out["error"] = (c["ename"], c["evalue"])
        elif t == "status" and c["execution_state"] == "idle":
            return out


@pytest.mark.parametrize("code", CASES)
def test_matches_ipykernel(kernel, ex, code):
    want = ipykernel_run(kernel, code)
    r = ex.run(code)
    got_err = (r.error["name"], r.error["value"]) if r.error else None
    assert got_err == want["error"]
    assert r.text == want["result"]
