# %%
print('hello')
42
# %%
for i in range(5):
    print(f'step {i}: {i ** 2}')
# %%
import sys, time
for i in range(0, 101, 25):
    print(f'\rprogress: {i}%', end='')
print()
# %%
print('to stderr', file=sys.stderr)
print('to stdout')
# %%
x = 10
x
# %%
x;
# %%
x  # comment
# %%
x = 5; x * 2
# %%
print('a', 'b', sep='-', end='!\n')
print()
print('tab\tsep')
# %%
'last string'
# %%
"it's"
# %%
None
# %%
print(x); x + 1
# %%
import warnings
warnings.warn('a user warning')
print('continued')
# %%
import pandas as pd
d = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]})
sub = d[d['a'] > 1]
sub['c'] = sub['b'] * 2
sub
# %%
s = pd.Series([1, 2, 3])
s.append(pd.Series([4])) if hasattr(s, 'append') else s
# %%
warnings.warn('deprecated thing', DeprecationWarning)
# %%
warnings.warn('future thing', FutureWarning)
# %%
import numpy as np
np.array([1.0]) / 0
# %%
sys.stdout.write('written\n')
# %%
sys.stderr.write('err written\n');
# %%
print('unicode: ação, 日本, ✓')
# %%
[print(i) for i in range(2)]
# %%
import logging
logging.warning('a log warning')
# %%
logging.getLogger('app').error('an app error')
