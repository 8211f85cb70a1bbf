"""Warnings in cells follow Python's default filters plus IPython's rule for
__main__, as in ipykernel: no ResourceWarning noise, DeprecationWarnings that
the cell itself raises are shown."""

from cellvm import Sandbox


def stderr_of(sbx, code):
    return "".join(sbx.run_code(code).logs.stderr)


def test_warning_filters_match_ipykernel(agent, tmp_path):
    with Sandbox.connect(agent.addr) as sbx:
        assert stderr_of(sbx, "open('/dev/null').read()") == ""  # unclosed: ResourceWarning hidden
        assert "DeprecationWarning: old" in stderr_of(
            sbx, "import warnings\nwarnings.warn('old', DeprecationWarning)")
        assert "UserWarning: careful" in stderr_of(sbx, "import warnings\nwarnings.warn('careful')")
        assert stderr_of(sbx, "import warnings\nwarnings.warn('pending', PendingDeprecationWarning)") == ""
