"""IPython.utils.capture's CapturedIO and RichOutput: what a %%capture
cell printed and displayed."""

import sys

from .display import publish_display_data


class CapturedIO:
        """IPython.utils.capture.CapturedIO: what a %%capture cell printed and
        displayed; show() (or calling it) outputs it again."""

        __module__ = "IPython.utils.capture"

        def __init__(self, stdout, stderr, outputs=None):
                self._stdout = stdout
                self._stderr = stderr
                self._outputs = outputs or []

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
