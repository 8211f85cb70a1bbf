"""IPython.core.compilerop's counterpart: the shell's CachingCompiler, as far
as IPython's own helpers use it (ultratb names a frame Cell In[n] through its
_filename_map; notebook importers compile cells with it)."""

import ast

from .interactiveshell import PARSE_FLAGS


class CachingCompiler:
        """get_ipython().compile: compiles with the flags the cells have set
        (their __future__ imports, as IPython's codeop.Compile keeps them)."""

        def __init__(self, kernel):
                self._kernel = kernel

        @property
        def _filename_map(self):
                """A cell's file name -> its execution count."""
                return self._kernel.cell_files

        @property
        def flags(self):
                return self._kernel.flags | PARSE_FLAGS

        def ast_parse(self, source, filename="<unknown>", symbol="exec"):
                return compile(source, filename, symbol, self.flags | ast.PyCF_ONLY_AST, 1)

        def __call__(self, source, filename, symbol):
                return compile(source, filename, symbol, self.flags, 1)

