# %%
import pandas as pd
import numpy as np
rng = np.random.default_rng(7)
df = pd.DataFrame(rng.normal(size=(80, 14)).round(3), columns=[f'feature_{i}' for i in range(14)])
df['label'] = pd.Categorical(rng.choice(['cat', 'dog', 'bird'], size=80))
df
# %%
with pd.option_context('display.max_rows', 6, 'display.max_columns', 5):
    print(df)
    display(df)
# %%
pd.set_option('display.max_rows', 10)
pd.set_option('display.min_rows', 4)
df.iloc[:, :3]
# %%
df['feature_0']
# %%
pd.reset_option('display.max_rows')
pd.reset_option('display.min_rows')
pd.get_option('display.max_rows'), pd.get_option('display.width')
# %%
pd.describe_option('display.precision')
# %%
df['label'].cat.categories, df['label'].dtype
# %%
df['label'].value_counts(normalize=True).round(3)
# %%
df.groupby('label', observed=True)[['feature_0', 'feature_1']].agg(['mean', 'std', 'min', 'max']).round(2)
# %%
idx = pd.MultiIndex.from_product([['north', 'south'], [2021, 2022, 2023], ['Q1', 'Q2']], names=['region', 'year', 'quarter'])
sales = pd.Series(rng.integers(100, 999, size=len(idx)), index=idx, name='units')
sales
# %%
sales.index
# %%
sales.unstack('quarter')
# %%
sales.groupby(level=['region', 'year']).sum().to_frame().T
# %%
pd.period_range('2023-01', periods=5, freq='M'), pd.timedelta_range('1h', periods=3, freq='90min')
# %%
pd.interval_range(0, 10, 4), pd.cut([1, 4, 7, 9.5], bins=[0, 5, 10])
# %%
pd.Series(pd.date_range('2024-03-09 22:00', periods=5, freq='h', tz='US/Eastern'))
# %%
pd.Series([1, None, 3], dtype='Int64'), pd.Series(['a', None, 'c'], dtype='string'), pd.Series([True, None], dtype='boolean')
# %%
pd.array([1.5, None, 2.25], dtype='Float64')
# %%
pd.Series(pd.arrays.SparseArray([0, 0, 1, 0, 2]))
# %%
wide = pd.DataFrame({f'a_very_long_column_name_number_{i}': ['x' * (i * 7)] for i in range(6)})
wide
# %%
pd.set_option('display.max_colwidth', 20)
wide.T
# %%
pd.reset_option('display.max_colwidth')
pd.set_option('display.float_format', '{:,.1f}'.format)
pd.DataFrame({'revenue': [1234567.891, 42.0, np.nan], 'ratio': [0.12345, 1.5, 2.0]})
# %%
pd.reset_option('display.float_format')
pd.set_option('display.show_dimensions', True)
df.iloc[:3, :3]
# %%
pd.reset_option('display.show_dimensions')
pd.set_option('display.large_repr', 'info')
df
# %%
pd.reset_option('display.large_repr')
df.info(memory_usage='deep', verbose=False)
# %%
df.memory_usage().head(3)
# %%
df.describe(include='all').iloc[:, -3:]
# %%
pd.DataFrame(), pd.Series(dtype=float), pd.DataFrame(columns=['a', 'b'])
# %%
dup = pd.DataFrame([[1, 2, 3]], columns=['x', 'x', 'y'])
dup['x']
# %%
pd.DataFrame({'nested': [[1, 2], {'k': 'v'}, (3,)], 'obj': [object, None, pd.NA]}).astype(str).replace(r'0x[0-9a-f]+', 'ADDR', regex=True)
# %%
pd.Index(['a', 'b', 'c'] * 40)
# %%
pd.RangeIndex(0, 1000, 5), pd.Index([1.5, 2.5]), pd.CategoricalIndex(['x', 'y', 'x'])
# %%
pd.set_option('display.max_rows', 5)
pd.Series(range(100), index=pd.date_range('2024-01-01', periods=100, freq='D'))
# %%
pd.reset_option('all')
