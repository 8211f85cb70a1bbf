"""What programs print of E2B's objects, E2B's own code against cellvm's:
str() and repr() of Execution, Result, Logs, ExecutionError, OutputMessage,
Context, EntryInfo, WriteInfo, CommandResult, CommandExitException and
SandboxInfo, Execution/Logs/ExecutionError.to_json(), Result.formats(), and
the timeout exceptions' messages. E2B's definitions are run unchanged from
its sources (tests/e2b_source_api.run_definitions: its models need only the
standard library once its imports of its transport are left out) and fed the
same values as cellvm's. No VM."""

import datetime as dt
import json

import pytest

from cellvm import exceptions as our_exc
from cellvm import models as ours
from e2b_source_api import E2B_ROOTS, HAVE_SOURCES, SHARED, E2BSource, run_definitions

pytestmark = pytest.mark.skipif(not HAVE_SOURCES, reason="E2B's SDK sources are not at " + SHARED)


@pytest.fixture(scope="module")
def e2b():
    """E2B's classes and functions, by name."""
    source = E2BSource(E2B_ROOTS)
    exc = run_definitions(source, "e2b.exceptions", {})
    charts = run_definitions(source, "e2b_code_interpreter.charts", {})
    models = run_definitions(source, "e2b_code_interpreter.models", {
        "NotFoundException": exc["NotFoundException"], "TimeoutException": exc["TimeoutException"],
        "SandboxException": exc["SandboxException"], "Response": object,
        "Chart": charts["Chart"], "_deserialize_chart": charts["_deserialize_chart"]})
    ci_exc = run_definitions(source, "e2b_code_interpreter.exceptions",
                             {"TimeoutException": exc["TimeoutException"]})
    files = run_definitions(source, "e2b.sandbox.filesystem.filesystem", {},
                            names=["FileType", "WriteInfo", "EntryInfo", "map_file_type_str", "map_metadata"])
    commands = run_definitions(source, "e2b.sandbox.commands.command_handle",
                               {"SandboxException": exc["SandboxException"]},
                               names=["CommandResult", "CommandExitException"])
    api = run_definitions(source, "e2b.sandbox.sandbox_api", {
        "SandboxState": ours.SandboxState, "SandboxNetworkInfo": dict, "SandboxInfoLifecycle": dict},
        names=["SandboxInfo"])
    found = {}
    for ns in (exc, models, ci_exc, files, commands, api):
        found.update({k: v for k, v in ns.items() if not k.startswith("__")})
    return found


def _both(e2b_obj, our_obj, *forms):
    for form in forms:
        assert form(our_obj) == form(e2b_obj), form


def _results(mod):
    chart = {"type": "line", "title": "t", "elements": [], "x_label": "x", "y_label": "y",
             "x_unit": None, "y_unit": None, "x_ticks": [0, 1], "x_tick_labels": ["0", "1"],
             "x_scale": "linear", "y_ticks": [0], "y_tick_labels": ["0"], "y_scale": "linear"}
    return [
        mod.Result(text="2", is_main_result=True),
        mod.Result(text="abc", html="<b>abc</b>", markdown="**abc**", json={"a": 1}),
        mod.Result(png="iVBORw0KGgo=", text="<Figure size 640x480 with 1 Axes>"),
        mod.Result(png="iVBORw0KGgo="),
        mod.Result(svg="<svg/>", latex="$x$", javascript="1", pdf="JVBERi0=", jpeg="/9j/"),
        mod.Result(data={"a": [1, 2]}, extra={"application/x-thing": "v"}),
        mod.Result(text="plot", png="iVBORw0KGgo=", chart=chart),
    ]


def test_result_prints_and_formats_as_e2bs(e2b):
    class E2BModels:
        Result = e2b["Result"]
    for theirs, mine in zip(_results(E2BModels), _results(ours)):
        _both(theirs, mine, str, repr, lambda r: list(r.formats()), lambda r: r._repr_html_(),
              lambda r: r._repr_markdown_(), lambda r: r._repr_png_(), lambda r: r._repr_json_(),
              lambda r: r["text"])


def test_execution_logs_and_error_print_as_e2bs(e2b):
    def build(mod):
        error = mod.ExecutionError("ZeroDivisionError", "division by zero",
                                   "Traceback (most recent call last):\n  ...\nZeroDivisionError: division by zero")
        logs = mod.Logs(stdout=["a\n", "b\n"], stderr=["warn\n"])
        results = [mod.Result(text="2", is_main_result=True), mod.Result(png="iVBORw0KGgo=", html="<p>")]
        return [mod.Execution(results=results, logs=logs, error=error, execution_count=3),
                mod.Execution(), mod.Execution(results=results[:1], execution_count=1)]

    class E2BModels:
        Result, Logs, Execution, ExecutionError = (e2b["Result"], e2b["Logs"], e2b["Execution"],
                                                   e2b["ExecutionError"])
    for theirs, mine in zip(build(E2BModels), build(ours)):
        _both(theirs, mine, str, repr, lambda x: x.to_json(), lambda x: x.text,
              lambda x: str(x.logs), lambda x: x.logs.to_json(),
              lambda x: (repr(x.error), str(x.error), x.error.to_json()) if x.error else None)
        assert json.loads(mine.to_json()) == json.loads(theirs.to_json())


def test_output_message_and_context_print_as_e2bs(e2b):
    for args in [("hello\n", 1733380000000000000, False), ("oops\n", 5, True)]:
        _both(e2b["OutputMessage"](*args), ours.OutputMessage(*args), str, repr)
    _both(e2b["Context"]("ctx-1", "python", "/home/user"), ours.Context("ctx-1", "python", "/home/user"),
          str, repr)


def test_file_and_command_types_print_as_e2bs(e2b):
    when = dt.datetime(2026, 12, 5, 7, 0, 1, 250000)
    entry = dict(name="a.txt", path="/home/user/a.txt", size=3, mode=0o644, permissions="-rw-r--r--",
                 owner="user", group="user", modified_time=when)
    for kind in ("FILE", "DIR"):
        theirs = e2b["EntryInfo"](type=e2b["FileType"][kind], **entry)
        mine = ours.EntryInfo(type=ours.FileType[kind], **entry)
        _both(theirs, mine, str, repr)
    _both(e2b["WriteInfo"](name="a", type=e2b["FileType"].FILE, path="/a"),
          ours.WriteInfo(name="a", type=ours.FileType.FILE, path="/a"), str, repr)
    payload = {"name": "a", "type": "file", "path": "/home/user/a"}
    _both(e2b["WriteInfo"].from_dict(payload), ours.WriteInfo.from_dict(payload), repr)
    _both(e2b["CommandResult"]("err", "out", 1, "exit status 1"),
          ours.CommandResult("err", "out", 1, "exit status 1"), str, repr)
    _both(e2b["CommandExitException"]("err", "out", 1, "exit status 1"),
          our_exc.CommandExitException("err", "out", 1, "exit status 1"), str,
          lambda e: (e.stdout, e.stderr, e.exit_code, e.error))


def test_sandbox_info_prints_as_e2bs(e2b):
    fields = dict(sandbox_id="qemu-1a2b3c4d", sandbox_domain=None, template_id="code-interpreter-v1",
                  name=None, metadata={"k": "v"},
                  started_at=dt.datetime(2026, 12, 5, 7, 0, tzinfo=dt.timezone.utc),
                  end_at=dt.datetime(2026, 12, 5, 7, 5, tzinfo=dt.timezone.utc),
                  state=ours.SandboxState.RUNNING, cpu_count=1, memory_mb=1024, envd_version="0.1.0")
    _both(e2b["SandboxInfo"](**fields), ours.SandboxInfo(**fields), str, repr)


def test_timeout_messages_are_e2bs(e2b):
    for name in ("format_request_timeout_error", "format_execution_timeout_error",
                 "format_sandbox_killed_error"):
        theirs, mine = e2b[name](), getattr(our_exc, name)()
        assert type(mine).__name__ == type(theirs).__name__ == "TimeoutException"
        assert str(mine) == str(theirs), name
    theirs = e2b["format_sandbox_timeout_exception"]("context deadline exceeded")
    mine = our_exc.format_sandbox_timeout_exception("context deadline exceeded")
    assert (type(mine).__name__, str(mine)) == (type(theirs).__name__, str(theirs))
