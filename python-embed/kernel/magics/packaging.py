"""IPython.core.magics.packaging's counterpart: %pip, %conda."""

import os
import sys

from ..foreign_frames import ipython_raising

# Outside a conda environment IPython's %conda refuses, at its line.
_conda_refused = ipython_raising("core/magics/packaging.py", 87, "PackagingMagics.conda", ("self", "line"))


class PackagingMagics:
        """IPython's PackagingMagics (IPython.core.magics.packaging), mixed into zmqshell.Shell."""

        def _pip(self, tool, line):
                self.system(f"{sys.executable} -m {tool} {line}")
                print("Note: you may need to restart the kernel to use updated packages.")

        def magic_pip(self, line):
                self._pip("pip", line)

        def magic_conda(self, line):
                """IPython's %conda: only in a conda environment (which the image is not)."""
                if not os.path.exists(os.path.join(sys.prefix, "conda-meta", "history")):
                        _conda_refused(ValueError("The python kernel does not appear to be a conda environment.  "
                                                  "Please use ``%pip install`` instead."), line)
                self.system(f"conda {line}")
                print("\nNote: you may need to restart the kernel to use updated packages.")
