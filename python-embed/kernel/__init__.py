"""The notebook kernel of cellvm-executor (docs/PROTOCOL.md section 8).

Embedded into the executor binary as the package `_cellvm_kernel`
(python-embed/embed_sources.py; python-embed/embedded_import.py imports it).
The C side calls zygote_preload() once in the zygote, then executor_prepare()
and executor_main() in each forked executor. Semantics follow ipykernel 6 /
IPython 8.5: persistent namespace, __future__ flags carried across cells, the
trailing expression as the execute result, In/Out/_/_N/_iN, rich display,
!shell lines and magics, matplotlib figures shown once per cell.

Each module stands in for the IPython / ipykernel module it is named after:

  kernelapp          ipykernel.kernelapp: the entry points (zygote, executor)
  ipkernel           ipykernel.ipkernel: Kernel, one context's executor
  kernelbase         ipykernel.kernelbase: SIGINT only while a cell runs
  session            jupyter_client.session: message types, sending one
  iostream           ipykernel.iostream: sys.stdout/stderr of a cell
  interactiveshell   IPython.core.interactiveshell: run_cell, compiling a cell
  inputtransformer2  IPython.core.inputtransformer2: !cmd, %magic, prompts
  displayhook        IPython.core.displayhook: the trailing expression's result
  ultratb            IPython.core.ultratb: tracebacks
  zmqshell           ipykernel.zmqshell: the shell get_ipython() returns
  magics/            IPython.core.magics: the line and cell magics, by module
  events             IPython.core.events: shell.events callbacks
  formatters         IPython.core.formatters: MIME bundles of an object
  display            IPython.core.display_functions: display() and kin
  capture            IPython.utils.capture: %%capture's CapturedIO
  pylabtools         IPython.core.pylabtools: figures as PNG/SVG/...
  backend_inline     matplotlib_inline.backend_inline: the inline backend
  e2b_data           E2B's template formatters (startup_scripts/0002_data.py)
  getipython         IPython.core.getipython: get_ipython()
  error              IPython.core.error: UsageError, StdinNotImplementedError
  text               IPython.utils.text: SList, what `x = !cmd` returns
  autoreload         IPython.extensions.autoreload: %autoreload, %aimport
  importhook         (none: callbacks run as selected modules are imported)
  foreign_frames     (none: functions whose frames read as IPython's or matplotlib's)
"""

from .kernelapp import executor_main, executor_prepare, zygote_preload  # noqa: F401


