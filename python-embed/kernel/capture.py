"""IPython.utils.capture's CapturedIO and RichOutput: what a %%capture
cell printed and displayed; capture_output, the context manager that
collects them."""

import io
import sys

from .display import _capturing, publish_display_data
from .iostream import _flush_std


class CapturedIO:
        """IPython.utils.capture.CapturedIO: what a %%capture cell printed and
        displayed; show() (or calling it) outputs it again."""

        __module__ = "IPython.utils.capture"

        def __init__(self, stdout, stderr, outputs=None):
                self._stdout = stdout
                self._stderr = stderr
                self._outputs = [] if outputs is None else outputs  # filled while the block runs

        def __str__(self):
                return self.stdout

        @property
        def stdout(self):
                return self._stdout.getvalue() if self._stdout else ""

        @property
        def stderr(self):
                return self._stderr.getvalue() if self._stderr else ""

        @property
        def outputs(self):
                return [_RichOutput(o["data"], o.get("metadata")) for o in self._outputs]

        def show(self):
                if self.stdout:
                        sys.stdout.write(self.stdout)
                if self.stderr:
                        sys.stderr.write(self.stderr)
                for o in self._outputs:
                        publish_display_data(o["data"], o.get("metadata"))

        __call__ = show


class _RichOutput:
        """IPython.utils.capture.RichOutput: one captured display."""

        __module__ = "IPython.utils.capture"

        def __init__(self, data, metadata=None):
                self.data = data
                self.metadata = metadata or {}

        def display(self):
                publish_display_data(self.data, self.metadata)

        def _repr_mime_(self, mime):
                return self.data.get(mime)

        def _repr_html_(self):
                return self._repr_mime_("text/html")

        def _repr_markdown_(self):
                return self._repr_mime_("text/markdown")

        def _repr_svg_(self):
                return self._repr_mime_("image/svg+xml")

        def _repr_png_(self):
                return self._repr_mime_("image/png")

        def _repr_jpeg_(self):
                return self._repr_mime_("image/jpeg")

        def _repr_latex_(self):
                return self._repr_mime_("text/latex")

        def _repr_json_(self):
                return self._repr_mime_("application/json")

        def _repr_javascript_(self):
                return self._repr_mime_("application/javascript")


class capture_output:  # noqa: N801 - IPython's name
        """IPython.utils.capture.capture_output: prints (and displays) within the
        block kept in the CapturedIO it returns. IPython's swaps the shell's
        display_pub, which this shell has not; displays are kept as %%capture
        keeps them."""

        __module__ = "IPython.utils.capture"

        def __init__(self, stdout=True, stderr=True, display=True):
                self.stdout, self.stderr, self.display = stdout, stderr, display

        def __enter__(self):
                _flush_std()
                self.sys_stdout, self.sys_stderr = sys.stdout, sys.stderr
                stdout = stderr = outputs = None
                if self.stdout:
                        stdout = sys.stdout = io.StringIO()
                if self.stderr:
                        stderr = sys.stderr = io.StringIO()
                if self.display:
                        outputs = []
                        _capturing.append(outputs)
                self._outputs = outputs
                return CapturedIO(stdout, stderr, outputs)

        def __exit__(self, exc_type, exc_value, traceback):
                sys.stdout, sys.stderr = self.sys_stdout, self.sys_stderr
                if self._outputs is not None and _capturing and _capturing[-1] is self._outputs:
                        _capturing.pop()


def _on_ipython_capture_import(mod):
        # The module's names are these: %%capture's CapturedIO is the module's,
        # and capture_output collects where this kernel's display() sends.
        mod.capture_output = capture_output
        mod.CapturedIO = CapturedIO
        mod.RichOutput = _RichOutput
