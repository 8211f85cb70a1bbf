# %%
import pandas as pd
df = pd.DataFrame({'a': [1, 2, 3], 'b': [4.0, 5.5, 6.1]})
df['missing_column']
# %%
undefined_thing + 1
# %%
'a' + 1
# %%
pd.to_numeric(pd.Series(['1', 'x']))
# %%
10 / 0
# %%
[1, 2, 3][10]
# %%
df.nonexistent_method()
# %%
import seaborn
# %%
from sklearn.linear_model import LinearRegression
# %%
def f(x:
    return x
# %%
def g():
return 1
# %%
for i in range(3):
    print(i)
  print('bad')
# %%
def helper(d, k):
    total = 0
    for key in d:
        total += d[key]
    return d[k] / total

print('defined')
# %%
helper({'x': 1, 'y': 0}, 'z')
# %%
helper({'x': 0}, 'x')
# %%
df.loc[10]
# %%
df.iloc[10]
# %%
int('3.5')
# %%
pd.DataFrame({'a': [1, 2], 'b': [1]})
# %%
df.merge(df, on='zzz')
# %%
import math
math.sqrt(-1)
# %%
x = [1, 2]
x.push(3)
# %%
raise ValueError("custom: bad input")
# %%
assert len(df) == 5, f"expected 5 rows, got {len(df)}"
# %%
print('before the error')
{}['missing']
