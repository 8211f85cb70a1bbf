# %%
print "hello"
# %%
x = = 1
# %%
s = 'unterminated
# %%
f"{1 + }"
# %%
def parse(v):
    try:
        return int(v)
    except ValueError as e:
        raise RuntimeError(f'cannot parse {v!r}') from e
parse('abc')
# %%
try:
    {}['a']
except KeyError:
    1 / 0
# %%
e = ValueError('with note')
e.add_note('extra detail')
raise e
# %%
import pandas as pd
s = pd.Series([1, 2, 0])
s.apply(lambda v: 10 / v)
# %%
total = (1 +
         2 +
         undefined_var)
# %%
class ValidationError(Exception):
    pass
raise ValidationError('line one\nline two')
# %%
raise Exception()
# %%
raise KeyError()
# %%
import json
json.dumps({'a': {1, 2}})
# %%
import numpy as np
np.array([1, 2]).reshape(3)
# %%
np.linalg.inv(np.zeros((2, 2)))
# %%
pd.DataFrame({'a': [1]}).plot(kind='nope')
# %%
pd.read_csv('/nonexistent/data.csv')
# %%
df = pd.DataFrame({'a': [1, 2]})
df['a'].astype(int) + 'x'
# %%
import os
os.makedirs('/proc/forbidden/dir')
# %%
def outer():
    def inner(x, *args, y=2, **kw):
        return x[5]
    return inner([1], 3, z=4)
outer()
# %%
while True:
    break
else:
    pass
print('ok after errors')
# %%
yield 5
# %%
return 1
# %%
await_this = 1
await undefined_coro()
# %%
from math import nonexistent_name
# %%
import os.nonexistent
# %%
None.attr
# %%
len(5)
# %%
[1, 2].index(3)
# %%
'abc'.encode('ascii') + 'x'
# %%
import datetime
datetime.datetime.strptime('2024-13-01', '%Y-%m-%d')
# %%
pd.Timestamp('not a date')
# %%
if True:
    x = 1
  y = 2
# %%
for i in range(2):
        print(i)
    print('dedent to nowhere')
# %%
def f():
	return 1
        return 2
# %%
x = 1
    y = 2
