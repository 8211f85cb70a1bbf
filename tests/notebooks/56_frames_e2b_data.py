# %%
import pandas as pd, numpy as np, io, decimal, datetime
raw = '''id,name,joined,score,active,city
1,Ana,2024-01-05,9.5,true,Lisbon
2,Bo,2024-02-11,,false,
3,Cy,not a date,7.25,true,Porto
4,Di,2024-03-30,8.0,,Faro
'''
df = pd.read_csv(io.StringIO(raw), parse_dates=['joined'])
df
# %%
df.dtypes
# %%
df['joined'] = pd.to_datetime(df['joined'], errors='coerce')
df
# %%
df.assign(delta=df['joined'] - df['joined'].min(), month=df['joined'].dt.to_period('M'))
# %%
pd.read_csv(io.StringIO('a,b\n1,2\n3,4,5\n'))
# %%
pd.read_csv(io.StringIO('a,b\n1,2\n3,4,5\n'), on_bad_lines='skip')
# %%
pd.read_csv(io.StringIO('a;b\n1,5;2\n'), sep=';', decimal=',')
# %%
records = [{'id': 1, 'user': {'name': 'a', 'tags': ['x', 'y']}}, {'id': 2, 'user': {'name': 'b', 'tags': []}}]
pd.json_normalize(records)
# %%
pd.read_json(io.StringIO('{"a": 1, "b": [1, 2]}\n{"a": 2, "b": []}\n'), lines=True)
# %%
pd.DataFrame({'obj': [decimal.Decimal('1.5'), datetime.date(2024, 1, 1), None, b'bytes']})
# %%
pd.DataFrame({'i': np.array([1, 2], dtype=np.int8), 'u': np.array([3, 4], dtype=np.uint64), 'f': np.array([0.5, np.nan], dtype=np.float32), 'b': [True, False], 'c': [1 + 2j, 0j]})
# %%
pd.DataFrame({'td': pd.to_timedelta(['1 days', '2 hours']), 'tz': pd.date_range('2024-01-01', periods=2, tz='Europe/Lisbon'), 'nat': [pd.NaT, pd.Timestamp('2024-01-01')]})
# %%
pd.DataFrame({'cat': pd.Categorical(['a', 'b']), 'iv': pd.arrays.IntervalArray.from_breaks([0, 1, 2]), 'per': pd.period_range('2024', periods=2, freq='Y')})
# %%
pd.DataFrame({'Int64': pd.array([1, None], dtype='Int64'), 'str': pd.array(['x', None], dtype='string'), 'bool': pd.array([True, None], dtype='boolean')})
# %%
mi = pd.DataFrame(np.arange(8).reshape(2, 4), columns=pd.MultiIndex.from_product([['a', 'b'], ['x', 'y']]))
mi
# %%
pd.DataFrame({1: [1], 2.5: [2], None: [3], (1, 2): [4]})
# %%
pd.DataFrame({'inf': [np.inf, -np.inf], 'nan': [np.nan, 1.0]})
# %%
pd.DataFrame(np.random.default_rng(0).integers(0, 100, size=(300, 4)), columns=list('wxyz')).describe()
# %%
big = pd.DataFrame({'k': np.arange(2000) % 7, 'v': np.arange(2000) * 0.5})
big.groupby('k').agg(total=('v', 'sum'), n=('v', 'size'))
# %%
big.pivot_table(index='k', values='v', aggfunc=[np.mean, np.max]).head(3)
# %%
pd.crosstab(big.k, big.v > 500, margins=True)
# %%
df.set_index('id').T
# %%
df.to_dict(orient='records')
# %%
df.head(2).to_json(orient='records', date_format='iso')
# %%
df.style.format({'score': '{:.1f}'}, na_rep='—').hide(axis='index')
# %%
pd.concat({'left': df.head(1), 'right': df.tail(1)}, names=['side'])
# %%
pd.merge(df, pd.DataFrame({'id': [1, 3, 9], 'team': ['red', 'blue', 'none']}), on='id', how='outer', indicator=True)
# %%
pd.DataFrame(index=pd.Index([], name='empty')), pd.DataFrame({'only_index': []}).set_index('only_index')
# %%
df.select_dtypes('number').corr().round(3)
# %%
df.sample(2, random_state=1)
# %%
s = df['score']
display(s.to_frame(), s)
# %%
df.query('score > 8 and active == True')
