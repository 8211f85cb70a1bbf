"""IPython.core.magics.packaging's counterpart: %pip."""

import sys


class PackagingMagics:
        """IPython's PackagingMagics (IPython.core.magics.packaging), mixed into zmqshell.Shell."""

        def _pip(self, tool, line):
                self.system(f"{sys.executable} -m {tool} {line}")
                print("Note: you may need to restart the kernel to use updated packages.")

        def magic_pip(self, line):
                self._pip("pip", line)
