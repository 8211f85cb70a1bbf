# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
df = pd.read_csv(CSV, parse_dates=['data'])
# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3))
fig.suptitle('Três gráficos')
for ax, col in zip(axes, ['quantidade', 'preco_unitario', 'valor']):
    ax.hist(df[col], bins=8)
    ax.set_title(col)
plt.show()
# %%
plt.figure(dpi=150)
plt.imshow(np.arange(100).reshape(10, 10), cmap='viridis')
plt.colorbar()
plt.show()
# %%
plt.rcParams['figure.figsize'] = (5, 2.5)
plt.plot(df['data'], df['valor'].cumsum())
plt.xticks(rotation=30)
plt.show()
# %%
plt.rcParams['figure.figsize'] = (6.4, 4.8)
df.hist(column=['quantidade', 'valor'])
# %%
fig = plt.figure()
fig.patch.set_alpha(0.0)
plt.plot([1, 2, 1])
plt.show()
# %%
fig, ax = plt.subplots()
ax.plot([1, 2])
display(fig)
# %%
fig, ax = plt.subplots()
ax.bar(['a', 'b'], [1, 2])
plt.close(fig)
fig
# %%
plt.gcf()
# %%
plt.ioff()
fig2 = plt.figure()
plt.plot([2, 1])
print('ioff figure made')
# %%
plt.show()
# %%
plt.ion()
df.groupby('produto')['valor'].sum().sort_values().plot(kind='barh', figsize=(6, 3))
plt.title('Por produto')
plt.tight_layout()
# %%
ax = df.pivot_table(index=df['data'].dt.month, columns='regiao', values='valor', aggfunc='sum').plot(figsize=(8, 4))
ax.set_ylabel('R$')
# %%
fig, ax = plt.subplots()
ax.scatter(df['quantidade'], df['valor'], c=df['preco_unitario'], alpha=0.5)
ax.set_xlabel('qtd')
fig.savefig('scatter.png', dpi=80, bbox_inches='tight')
plt.close(fig)
import os
os.path.getsize('scatter.png') > 0
# %%
from PIL import Image as PILImage
im = PILImage.open('scatter.png')
im.size
# %%
os.remove('scatter.png')
plt.subplots(2, 2)
# %%
plt.pie([1, 2, 3], labels=['x', 'y', 'z'], autopct='%1.1f%%')
plt.axis('equal')
# %%
np.random.seed(3)
plt.plot(np.random.randn(50).cumsum())
plt.savefig('line.svg')
print(os.path.exists('line.svg'))
os.remove('line.svg')
