# %%
'IPKernelApp' in get_ipython().config, type(get_ipython().config).__name__
# %%
from IPython.core.interactiveshell import InteractiveShell
InteractiveShell.initialized(), type(InteractiveShell.instance()).__name__, InteractiveShell.instance() is get_ipython()
# %%
from IPython.core.display import display as d3
from IPython.core.display_functions import display as d4
d3 is display, d4 is display
# %%
from IPython import get_ipython as gi
gi() is get_ipython(), type(gi()).__module__
# %%
import IPython
import IPython.core.formatters
hasattr(get_ipython(), 'kernel'), IPython.core.formatters.format_display_data({'a': 1})[0]
# %%
try:
    shell = get_ipython().__class__.__name__
    in_notebook = shell == 'ZMQInteractiveShell'
except NameError:
    in_notebook = False
in_notebook
