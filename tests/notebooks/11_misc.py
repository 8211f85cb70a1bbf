# %%
%matplotlib inline
import pandas as pd
import numpy as np
df = pd.read_csv(CSV)
# %%
df.groupby('regiao').mean()
# %%
df.groupby('regiao').mean(numeric_only=True).round(1)
# %%
df['valor'].apply(lambda v: v * 2).head(3)
# %%
print(df.head(3).to_csv(index=False))
# %%
df.head(2).to_json(orient='records')
# %%
df.head(2).to_dict(orient='records')
# %%
%pwd
# %%
%%writefile notes.txt
line one
line two
# %%
%%writefile notes.txt
overwritten
# %%
print(open('notes.txt').read())
import os
os.remove('notes.txt')
# %%
%env MY_TEST_VAR=hello
# %%
os.environ['MY_TEST_VAR']
# %%
from tqdm import tqdm
# %%
df.style
# %%
display(df.head(2).style.format({'valor': '{:.1f}'}))
# %%
pd.options.display.max_rows
# %%
pd.get_option('display.max_columns'), pd.get_option('display.width')
# %%
np.random.seed(42)
pd.DataFrame(np.random.randn(4, 3), columns=list('abc')).round(3)
# %%
s = pd.Series(np.random.randn(100))
s.describe()
# %%
pd.DataFrame({'nome': ['José', 'Zoë', '東京'], 'v': [1, 2, 3]})
# %%
df.loc[df['valor'] > 5000, ['produto', 'valor']].head()
# %%
df.query('regiao == "Sul" and quantidade > 5').shape
# %%
df.sample(3, random_state=0)
# %%
df.memory_usage(deep=True)
# %%
df.select_dtypes('number').agg(['min', 'max', 'mean'])
# %%
df['produto'].str.upper().head(2)
# %%
df.drop(columns=['nope'])
# %%
df.astype({'quantidade': 'float'}).dtypes
# %%
pd.concat([df.head(1), df.tail(1)])
# %%
pd.merge(df.head(3), df.head(3), on='data', suffixes=('_l', '_r')).shape
# %%
df.set_index(['regiao', 'produto']).sort_index().head(4)
# %%
df.value_counts(['regiao']).head(3)
# %%
df.nunique()
# %%
pd.cut(df['valor'], bins=3).value_counts().sort_index()
# %%
df.iloc[:3, :2].values
# %%
import warnings
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    r = df.groupby('regiao').mean()
r.shape
