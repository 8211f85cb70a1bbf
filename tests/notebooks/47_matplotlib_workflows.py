# %%
%matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
x = np.linspace(0, 2 * np.pi, 100)
# %%
plt.plot(x, np.sin(x))
# %%
lines = plt.plot(x, np.sin(x), x, np.cos(x))
lines
# %%
plt.plot(x, x ** 2);
# %%
fig, ax = plt.subplots()
ax.plot(x, np.tan(x))
ax.set_ylim(-5, 5)
# %%
fig
# %%
fig, axes = plt.subplots(2, 2, figsize=(6, 4), sharex=True)
for i, ax in enumerate(axes.flat):
    ax.plot(x, np.sin(x * (i + 1)))
    ax.set_title(f'k={i + 1}')
fig.tight_layout()
axes
# %%
for k in range(3):
    plt.figure(figsize=(3, 2))
    plt.bar(['a', 'b', 'c'], [k, k + 1, k + 2])
    plt.title(f'bar {k}')
# %%
plt.plot([1, 2, 3])
plt.show()
print('between figures')
plt.plot([3, 2, 1])
plt.title('second')
# %%
f1 = plt.figure()
plt.plot([1, 2])
f2 = plt.figure()
plt.plot([2, 1])
plt.close(f1)
plt.get_fignums()
# %%
plt.figure()
plt.close()
plt.get_fignums(), 'closed current'
# %%
fig = plt.figure(figsize=(4, 3))
ax = fig.add_subplot(111)
ax.hist(np.random.default_rng(1).normal(size=500), bins=20)
plt.close(fig)
fig
# %%
plt.rcParams['figure.figsize'] = (4, 2.5)
plt.rcParams['axes.grid'] = True
plt.plot(x, np.exp(-x))
plt.rcParams['figure.figsize'], plt.rcParams['figure.dpi']
# %%
plt.rcdefaults()
with plt.style.context('ggplot'):
    plt.plot([1, 3, 2])
plt.style.available[:3]
# %%
import os, tempfile
path = os.path.join(tempfile.mkdtemp(), 'chart.png')
fig, ax = plt.subplots(figsize=(3, 2))
ax.scatter([1, 2, 3], [3, 1, 2])
fig.savefig(path, dpi=50)
plt.close(fig)
os.path.getsize(path) > 0
# %%
from IPython.display import Image
Image(path)
# %%
ts = pd.DataFrame({'a': np.arange(10), 'b': np.arange(10)[::-1]}, index=pd.date_range('2024-01-01', periods=10))
ts.plot()
# %%
ts.plot(kind='bar', subplots=True, figsize=(5, 4))
# %%
ts['a'].plot.hist(bins=5);
# %%
ts.hist(figsize=(5, 2))
# %%
ts.plot.scatter(x='a', y='b', c='a', colormap='viridis')
# %%
ax = ts.plot(title='twin')
ax2 = ax.twinx()
ax2.plot(ts.index, ts['a'] * 100, 'r--')
ax.get_legend_handles_labels()[1], ax.get_title()
# %%
%config InlineBackend.figure_format = 'svg'
plt.plot([1, 2, 1])
# %%
%config InlineBackend.figure_format = 'png'
plt.gca()
# %%
plt.imshow(np.arange(16).reshape(4, 4), cmap='magma')
plt.colorbar()
# %%
fig = plt.figure()
fig.text(0.5, 0.5, 'just text')
fig.suptitle('Title')
# %%
plt.subplots(1, 3)[1]
# %%
plt.close('all')
plt.get_fignums()
