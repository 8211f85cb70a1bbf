# %%
import pandas as pd
import numpy as np
df = pd.read_csv(CSV, parse_dates=['data'])
df.dtypes
# %%
ts = df.set_index('data')['valor']
ts.head()
# %%
ts.resample('W').sum()
# %%
ts.rolling(3).mean().head(6)
# %%
df['data'].dt.day_name().head()
# %%
df['data'].min(), df['data'].max()
# %%
df['data'].max() - df['data'].min()
# %%
pd.Timestamp('2024-03-15 10:30')
# %%
pd.Timedelta(days=2, hours=3)
# %%
pd.Period('2024-03', freq='M')
# %%
import datetime
datetime.date(2024, 1, 2)
# %%
datetime.datetime(2024, 1, 2, 3, 4, 5)
# %%
datetime.timedelta(hours=5)
# %%
df.groupby(df['data'].dt.month)['valor'].agg(['sum', 'max'])
# %%
df.assign(semana=df['data'].dt.isocalendar().week).head(3)
# %%
ts.pct_change().head(4)
# %%
df['valor'].cumsum().tail(3)
# %%
pd.crosstab(df['regiao'], df['produto'])
# %%
df.pivot_table(index=df['data'].dt.to_period('W'), values='quantidade', aggfunc='sum').head()
# %%
df.nlargest(3, 'valor')
