# %%
def gen():
    yield 1
    raise ValueError('bad value inside generator')
list(gen())
# %%
squares = [1 / x for x in [1, 2, 0, 4]]
# %%
{k: v for k, v in zip('abc', [1, 2, None]) if v > 1}
# %%
f = lambda s: s.upper()
list(map(f, ['a', 3]))
# %%
sorted([3, 'a', 1])
# %%
try:
    1 / 0
except ZeroDivisionError:
    undefined_name
# %%
assert 1 + 1 == 3, f'math is broken: {1 + 1}'
# %%
x = [1, 2]
assert len(x) == 3
# %%
print('before the syntax error')
x = (1,
     2
y = 3
# %%
print('ok')
  print('bad indent')
# %%
def f():
	if True:
        return 1
# %%
raise KeyboardInterrupt
# %%
raise SystemExit('stopping here')
# %%
raise SystemExit(3)
# %%
import sys
sys.exit()
# %%
raise StopIteration('top-level stop')
# %%
next(iter([]))
# %%
class Weird(Exception):
    def __str__(self):
        return 'line one\nline two'
raise Weird()
# %%
raise ValueError()
# %%
raise ValueError('a', 2, None)
# %%
class BrokenStr(Exception):
    def __str__(self):
        raise RuntimeError('no str')
raise BrokenStr('x')
# %%
def recurse(n):
    return recurse(n + 1)
recurse(0)
# %%
def a(): b()
def b(): c()
def c(): raise TypeError('deep')
a()
# %%
import pandas as pd
pd.DataFrame({'a': [1]})['b']
# %%
pd.DataFrame({'a': [1, 2]}).loc[5]
# %%
import numpy as np
np.zeros((2, 3)) @ np.zeros((2, 3))
# %%
int('12a')
# %%
b'\xff'.decode('utf-8')
# %%
open('/definitely/not/here.txt')
# %%
import warnings
with warnings.catch_warnings():
    warnings.simplefilter('error', UserWarning)
    warnings.warn('now an error')
# %%
class Bad:
    def __repr__(self):
        raise ValueError('repr failed')
Bad()
# %%
print('stdout first')
import sys
print('stderr second', file=sys.stderr)
raise LookupError('after output')
# %%
exec('def g():\n    return 1/0\ng()')
# %%
eval('1 +')
# %%
compile('x = ', '<string>', 'exec')
# %%
import json
json.loads('{"a": 1,}')
# %%
10 ** 5000
# %%
str(10 ** 5000)
