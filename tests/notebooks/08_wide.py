# %%
import pandas as pd
import numpy as np
np.random.seed(1)
wide = pd.DataFrame(np.random.randint(0, 100, size=(100, 30)), columns=[f'col_{i}' for i in range(30)])
wide
# %%
wide.head()
# %%
pd.set_option('display.max_rows', 10)
pd.set_option('display.max_columns', 6)
wide
# %%
wide['col_0']
# %%
print(wide.head(3))
# %%
pd.reset_option('display.max_rows')
pd.reset_option('display.max_columns')
long = pd.DataFrame({'k': np.arange(200), 'v': np.arange(200) * 0.5})
long
# %%
long['v']
# %%
idx = pd.MultiIndex.from_product([['a', 'b'], [1, 2, 3]], names=['letter', 'num'])
mi = pd.DataFrame({'val': np.arange(6) * 1.5}, index=idx)
mi
# %%
mi.unstack()
# %%
mi['val']
# %%
pd.DataFrame({'f': [1.123456789, 1234567.891, 0.000012]})
# %%
pd.set_option('display.float_format', '{:.2f}'.format)
pd.DataFrame({'f': [1.123456789, 1234567.891, 0.000012]})
# %%
pd.reset_option('display.float_format')
pd.Series(['a', None, 'c'], dtype='object')
# %%
pd.Series([1, None, 3])
# %%
pd.Categorical(['x', 'y', 'x'])
# %%
pd.Series(pd.Categorical(['x', 'y', 'x']))
# %%
pd.DataFrame()
# %%
pd.Series([], dtype=float)
# %%
pd.Index([1, 2, 3])
# %%
pd.date_range('2024-01-01', periods=4, freq='D')
# %%
df = pd.DataFrame({'text': ['a' * 80, 'b']})
df
# %%
df.to_dict()
# %%
pd.DataFrame({'a': [1, 2]}).to_markdown()
