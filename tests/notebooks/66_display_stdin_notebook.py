# %%
# IPython.display's other objects, raw and published display data, the
# streams without a terminal, %notebook, %%writefile -a.
from IPython.display import JSON, Code, Pretty, display, publish_display_data, DisplayHandle
JSON({'a': 1, 'b': [1, 2]})
# %%
Code('x = 1\nprint(x)', language='python')
# %%
Pretty('pretty text')
# %%
display({'text/plain': 'hi', 'text/html': '<b>hi</b>'}, raw=True)
# %%
publish_display_data({'text/plain': 'published', 'text/markdown': '**pub**'})
# %%
h = DisplayHandle()
h.display('first')
h.update('second')
# %%
get_ipython().display_formatter.format(3)
# %%
%matplotlib --list
# %%
import sys, os
sys.stdout.isatty(), sys.stderr.isatty(), sys.stdin.isatty()
# %%
os.get_terminal_size()
# %%
input('name? ')
# %%
import getpass
getpass.getpass()
# %%
sys.stdin.read()
# %%
sys.stdin, sys.__stdin__ is sys.stdin, sys.stdin.buffer.raw.name, sys.stdin.mode, sys.stdin.errors
# %%
import sqlite3, pandas as pd
con = sqlite3.connect(':memory:')
pd.read_sql('select 1 as x, "a" as y', con)
# %%
multi_line = """a
b"""
print("é")
# %%
%notebook nb66.ipynb
# %%
# The history of the reference kernel holds other notebooks too: compare the
# last two cells, as nbformat writes them (cell ids are random; the counts
# are the kernel's).
import json, re
text = open('nb66.ipynb', encoding='utf-8').read()
nb = json.loads(text)
last_two = text[text.rindex('  {\n   "cell_type"', 0, text.rindex('  {\n   "cell_type"')):]
last_two = re.sub(r'"execution_count": \d+', '"execution_count": N', last_two)
print(re.sub(r'"id": "[0-9a-f]{8}"', '"id": ID', last_two))
# %%
nb['nbformat'], nb['nbformat_minor'], nb['metadata'], nb['cells'][-1]['execution_count'] - nb['cells'][-2]['execution_count']
# %%
os.remove('nb66.ipynb')
%notebook
# %%
%notebook a.ipynb b.ipynb
# %%
%%writefile nb66.txt
one
# %%
%%writefile -a nb66.txt
two
# %%
print(open('nb66.txt').read()); os.remove('nb66.txt')
# %%
import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 2)
fig
# %%
plt.gcf()
# %%
print('a', end='')
print('b', end='', file=sys.stderr)
# %%
from IPython.display import Latex, Math
Math(r'x^2'), Latex(r'$y$')
# %%
display(Math(r'\alpha'))
