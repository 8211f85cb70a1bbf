# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
df = pd.read_csv(CSV)
# %%
totals = df.groupby('regiao')['valor'].sum()
plt.figure(figsize=(8, 4))
plt.bar(totals.index, totals.values)
plt.title('Vendas por região')
plt.xticks(rotation=45)
plt.tight_layout()
plt.show()
# %%
fig, axes = plt.subplots(2, 2, figsize=(10, 8))
axes[0, 0].hist(df['valor'], bins=10)
axes[0, 1].scatter(df['quantidade'], df['valor'])
axes[1, 0].pie(df['produto'].value_counts(), labels=df['produto'].value_counts().index)
axes[1, 1].plot(np.arange(10), np.arange(10) ** 2)
plt.tight_layout()
# %%
fig, ax = plt.subplots()
ax.plot([1, 2, 3], [4, 5, 6])
fig.savefig('plot_test.png')
plt.show()
# %%
for i in range(3):
    plt.figure()
    plt.plot(np.arange(5) * i)
    plt.title(f'fig {i}')
plt.show()
# %%
plt.figure()
plt.plot([1, 2])
plt.close()
print('closed')
# %%
plt.plot([3, 1, 2])
# %%
plt.plot([3, 1, 2]);
# %%
df.plot(x='quantidade', y='valor', kind='scatter')
# %%
df['valor'].plot.hist(bins=5, title='hist')
plt.show()
# %%
fig = plt.figure(figsize=(3, 2), dpi=100)
fig
# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.set_title('left open')
print(type(fig).__name__)
# %%
plt.close('all')
len(plt.get_fignums())
# %%
import os
os.path.exists('plot_test.png'), os.remove('plot_test.png')
