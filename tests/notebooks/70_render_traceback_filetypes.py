# %%
# An error that renders its own traceback (_render_traceback_): notebooks'
# StopExecution idiom, a custom rendering, and one that fails to render.
class StopExecution(Exception):
    def _render_traceback_(self):
        pass
print('before')
raise StopExecution
# %%
'next cell runs'
# %%
class PrettyError(Exception):
    def _render_traceback_(self):
        return ["PrettyError: custom rendering\n", "  second line"]
raise PrettyError("x")
# %%
class StrError(Exception):
    def _render_traceback_(self):
        return "one string"
raise StrError("s")
# %%
def helper():
    raise PrettyError("from a function")
helper()
# %%
try:
    raise PrettyError('caught')
except PrettyError:
    get_ipython().showtraceback()
'goes on'
# %%
import sys
sys.last_value.__class__.__name__
# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(); ax.plot([1, 2, 3])
sorted(fig.canvas.get_supported_filetypes())
# %%
sorted(fig.canvas.get_supported_filetypes_grouped())
# %%
fig.savefig('chart.xyz')
# %%
import io
buf = io.BytesIO(); fig.savefig(buf, format='png'); buf.getvalue()[:8]
# %%
plt.close('all')
from matplotlib.figure import Figure
f2 = Figure(); f2.add_subplot().plot([3, 1])
f2
