# %%
%config IPCompleter.greedy = True
%config Nothing.greedy
# %%
%config PlainTextFormatter.max_seq_length = 5
list(range(20))
# %%
%config PlainTextFormatter.max_seq_length = 1000
%config PlainTextFormatter
# %%
%config NoSuchThing.value = 1
# %%
%config InlineBackend.figure_format = 'jpeg'
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
# %%
%config
# %%
%config InlineBackend.figure_format = 'png'
%config InlineBackend.rc = {'figure.figsize': (3, 2)}
plt.plot([3, 2, 1])
# %%
%config InlineBackend
# %%
%%capture out
import matplotlib.pyplot as plt
print('hidden print')
plt.plot([1, 2])
plt.show()
# %%
# e2b/chart: E2B's, absent from the reference kernel.
len(out.outputs), out.stdout, [sorted(set(o.data) - {'e2b/chart'}) for o in out.outputs]
# %%
out.show()
# %%
out()
# %%
%%capture --no-display
from IPython.display import display, HTML
display(HTML('<p>dropped</p>'))
print('kept')
# %%
%%time
from IPython.display import display, Markdown
display(Markdown('inside **time**'))
'time result'
# %%
ip = get_ipython()
ip.user_ns['from_api'] = 3
from_api, type(ip.user_ns).__name__, ip.user_module.__name__
# %%
ip.ev('1 + 2'), ip.ex('api_x = 5'), api_x
# %%
ip.push({'pushed': [1, 2]})
pushed
# %%
ip.drop_by_id({'pushed': pushed})
'pushed' in ip.user_ns
# %%
ip.getoutput('echo one; echo two')
# %%
ip.system('echo via system')
# %%
ip.run_line_magic('precision', '3')
import math
math.pi
# %%
%precision
math.pi
# %%
ip.find_line_magic('timeit') is not None, ip.find_cell_magic('bash') is not None, ip.find_magic('nothing')
# %%
ip.execution_count > 0
# %%
ip.var_expand('value {1 + 1} and $HOME is ${x}', depth=0)
# %%
ip.user_ns_hidden.__class__.__name__, 'In' in ip.user_ns_hidden
# %%
%config plaintextformatter
# %%
%config InteractiveShell.autocall
# %%
name = 'nb'
!echo $HOME {1 + 1} $name
# %%
!echo {name} $name {len(name)}
# %%
!echo {nope} $name
# %%
!echo $$name {{literal}}
