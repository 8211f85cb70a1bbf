# %%
import pandas as pd
import numpy as np
df = pd.read_csv(CSV)
df.head()
# %%
df.shape
# %%
df.info()
# %%
df.describe()
# %%
df.dtypes
# %%
df['data'] = pd.to_datetime(df['data'])
df['mes'] = df['data'].dt.to_period('M')
df[['data', 'mes']].head(3)
# %%
df.groupby('regiao')['valor'].agg(['sum', 'mean', 'count']).round(2)
# %%
pd.pivot_table(df, values='valor', index='regiao', columns='produto', aggfunc='sum', fill_value=0)
# %%
df['produto'].value_counts()
# %%
df['regiao'].unique()
# %%
df.isnull().sum()
# %%
top = df.sort_values('valor', ascending=False).head(5)
print(top.to_string())
# %%
df.groupby(['regiao', 'produto'])['quantidade'].sum()
# %%
df['valor'].sum(), df['valor'].mean()
# %%
df.columns.tolist()
# %%
df.corr(numeric_only=True)
# %%
print(f"Total de vendas: R$ {df['valor'].sum():,.2f}")
print("Regiões:", ", ".join(sorted(df['regiao'].unique())))
# %%
df.groupby('mes')['valor'].sum()
# %%
df.tail(3)
# %%
df.describe(include='object')
