"""IPython.core.magics.packaging's counterpart: %pip, %conda."""

import os
import sys


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
                        raise ValueError("The python kernel does not appear to be a conda environment.  "
                                         "Please use ``%pip install`` instead.")
                self.system(f"conda {line}")
                print("\nNote: you may need to restart the kernel to use updated packages.")
