# %%
from IPython import get_ipython
ip = get_ipython()
ip is not None, ip is get_ipython(), ip.__class__.__name__, type(ip).__module__
# %%
import IPython
import IPython.core.getipython
IPython.get_ipython() is ip, IPython.core.getipython.get_ipython() is ip
# %%
def in_notebook():
    try:
        shell = get_ipython().__class__.__name__
    except NameError:
        return False
    return shell == 'ZMQInteractiveShell'
in_notebook(), 'IPKernelApp' in get_ipython().config
# %%
from IPython.core.interactiveshell import InteractiveShell
isinstance(ip, IPython.core.interactiveshell.InteractiveShellABC), hasattr(ip, 'kernel')
# %%
ip.user_ns['answer'] = 42
answer, 'ip' in ip.user_ns
# %%
ip.run_line_magic('reload_ext', 'autoreload')
ip.run_line_magic('autoreload', '2')
print('autoreload on')
# %%
ip.magic('precision 2')
3.14159
# %%
ip.run_line_magic('precision', '')
ip.system('echo from system')
files = ip.getoutput('echo a; echo b')
files
# %%
ran = []
def before():
    ran.append('pre_execute')
def before_cell(info):
    ran.append(('pre_run_cell', info.raw_cell.strip()[:20], info.silent, info.store_history))
def after():
    ran.append('post_execute')
def after_cell(result):
    ran.append(('post_run_cell', result.success, result.result, result.error_in_exec is None))
ip.events.register('pre_execute', before)
ip.events.register('pre_run_cell', before_cell)
ip.events.register('post_execute', after)
ip.events.register('post_run_cell', after_cell)
'registered'
# %%
6 * 7
# %%
print(ran)
ran.clear()
# %%
1 / 0
# %%
print(ran)
ran.clear()
# %%
for name, f in [('pre_execute', before), ('pre_run_cell', before_cell),
                ('post_execute', after), ('post_run_cell', after_cell)]:
    ip.events.unregister(name, f)
ran.clear()
'unregistered'
# %%
ran
# %%
try:
    ip.events.unregister('post_execute', after)
except ValueError as e:
    print(type(e).__name__, str(e).split(' is not')[1])
try:
    ip.events.register('no_such_event', after)
except KeyError as e:
    print('KeyError', e)
try:
    ip.events.register('post_execute', 42)
except TypeError as e:
    print(e)
# %%
def announce():
    print('cell finished')
ip.events.register('post_run_cell', announce)
'no-arg post_run_cell'
# %%
print('body')
# %%
ip.events.unregister('post_run_cell', announce)
def broken():
    raise RuntimeError('callback broke')
ip.events.register('post_execute', broken)
'x'
# %%
ip.events.unregister('post_execute', broken)
'unregistered broken'
# %%
class Money:
    def __init__(self, v):
        self.v = v
html = ip.display_formatter.formatters['text/html']
html.for_type(Money, lambda m: f'<b>${m.v:.2f}</b>')
Money(3)
# %%
plain = ip.display_formatter.formatters['text/plain']
plain.for_type(Money, lambda m, p, cycle: p.text(f'Money({m.v})'))
[Money(1), Money(2)]
# %%
Money in html, html.lookup_by_type(Money)(Money(5))
# %%
class Temp:
    def __init__(self, c):
        self.c = c
ip.display_formatter.formatters['text/markdown'].for_type_by_name('__main__', 'Temp', lambda t: f'**{t.c} C**')
Temp(21)
# %%
plain.for_type(int, lambda n, p, cycle: p.text(hex(n)))
255
# %%
plain.pop(int)
[255, 16]
# %%
html.enabled = False
Money(4)
# %%
html.enabled = True
html.pop(Money)
Money(4)
# %%
import pandas as pd
df = pd.DataFrame({'a': [1, 2]})
ip.display_formatter.formatters['text/html'].for_type(pd.DataFrame, lambda d: '<p>custom frame</p>')
df
# %%
ip.display_formatter.formatters['text/html'].pop(pd.DataFrame)
from IPython.display import display
display(df)
# %%
from IPython.core.magic import register_line_magic, register_cell_magic
@register_line_magic
def shout(line):
    return line.upper()
@register_cell_magic
def count_lines(line, cell):
    return len(cell.splitlines())
%shout hello
# %%
%%count_lines
a
b
c
# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([1, 2, 3])
print('plotted')
# %%
drawn = []
count_figures = lambda: drawn.append(len(plt.get_fignums()))
ip.events.register('post_execute', count_figures)
plt.plot([3, 1, 2])
'with a callback'
# %%
drawn
# %%
plt.ioff()
fig = plt.figure(figsize=(2, 2))
plt.plot([1, 2])
plt.show()
plt.ion()
len(drawn)
# %%
ip.events.unregister('post_execute', count_figures)
ip.run_line_magic('autoreload', '0')
len(drawn)
