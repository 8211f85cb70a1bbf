# %%
import sys, os
import pandas as pd
import numpy as np
sys.stdout.isatty(), sys.stdout.encoding, sys.stderr.name, sys.stdout.name
# %%
__file__
# %%
type(__builtins__).__name__
# %%
def summarize(values):
    """Return min, max, mean."""
    return min(values), max(values), sum(values) / len(values)
help(summarize)
# %%
summarize??
# %%
%pinfo summarize
# %%
%%bash
echo from bash
echo to stderr >&2
# %%
%%sh
for i in 1 2; do echo "n=$i"; done
# %%
np.random.seed(7)
wide = pd.DataFrame(np.random.rand(5, 25).round(2), columns=[f'c{i}' for i in range(25)])
print(wide)
# %%
wide.info()
# %%
pd.set_option('display.precision', 2)
wide.iloc[:2, :4]
# %%
pd.reset_option('display.precision')
pd.reset_option('all')
wide.iloc[:2, :3]
# %%
pd.get_option('display.max_columns')
# %%
np.set_printoptions(threshold=5)
np.arange(10)
# %%
np.set_printoptions(threshold=1000)
np.arange(4.0)
# %%
pd.Series(np.arange(100))
# %%
pd.DataFrame({'a': range(3)}).T
# %%
df = pd.DataFrame({'grp': ['a', 'b', 'a'], 'v': [1, 2, 3]})
df.groupby('grp').agg(total=('v', 'sum'), n=('v', 'size'))
# %%
df.groupby('grp')['v'].apply(list)
# %%
df.describe().T
# %%
df.pivot(columns='grp', values='v')
# %%
df.melt(id_vars='grp')
# %%
pd.get_dummies(df['grp'])
# %%
df.style.background_gradient()
# %%
df.to_numpy()
# %%
df.dtypes.to_dict()
# %%
df['v'].to_list(), df.index
# %%
df.empty, df.size, len(df)
# %%
x = 3
print(f'{x=}, {x**2=}')
# %%
import time
start = time.time()
elapsed = time.time() - start
print(f'took {elapsed:.0f}s')
# %%
import textwrap
print(textwrap.dedent('''
    multi
      line
'''))
# %%
for i in range(3):
    display(i)
# %%
_ + 1 if isinstance(_, int) else 'n/a'
# %%
Out[max(Out)] if Out else None
# %%
%%bash
for i in 1 2; do
  echo "i=$i"
 done
# %%
    indented = 1
    indented + 1
# %%
>>> a = 2
>>> a * 3
# %%
In [1]: b = 5
In [2]: b
