# %%
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
df = pd.read_csv(CSV, parse_dates=['data'])
np.random.seed(21)
matplotlib.get_backend(), type(plt.gcf().canvas).__name__
# %%
# After a plt.ioff(), ipykernel's post_execute draw of open figures comes
# after the inline backend's flush: then it finds none, as in cellvm.
with plt.ioff():
    quiet = plt.figure()
quiet.add_subplot().plot([1, 2])
plt.close(quiet)
len(plt.get_fignums())
# %%
fig, axes = plt.subplots(2, 2, sharex=True, sharey=True, figsize=(6, 5))
for i, ax in enumerate(axes.flat):
    ax.plot(np.arange(10) * (i + 1))
fig.suptitle('shared axes')
axes.shape, axes[0, 0].get_shared_x_axes().joined(axes[0, 0], axes[1, 1])
# %%
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(np.arange(5), color='tab:blue')
ax2 = ax.twinx()
ax2.plot(np.arange(5) ** 3, color='tab:red')
ax2.set_ylabel('cubes')
# %%
fig, ax = plt.subplots()
im = ax.imshow(np.random.rand(8, 12), cmap='magma', aspect='auto')
fig.colorbar(im, ax=ax, label='intensity')
im
# %%
bars = plt.bar(['norte', 'sul', 'leste'], [3, 7, 5], color=['C0', 'C1', 'C2'])
plt.bar_label(bars, fmt='%.0f')
# %%
x, y = np.random.rand(2, 50)
plt.scatter(x, y, c=x + y, cmap='coolwarm', s=40)
plt.colorbar()
plt.show()
# %%
plt.boxplot([np.random.randn(30), np.random.randn(30) + 1], labels=['a', 'b'])
plt.title('boxplot')
# %%
xs = np.arange(6)
plt.errorbar(xs, xs ** 0.5, yerr=0.1, fmt='o-', capsize=3)
plt.fill_between(xs, xs ** 0.5 - 0.2, xs ** 0.5 + 0.2, alpha=0.3)
plt.annotate('peak', xy=(5, 5 ** 0.5), xytext=(3, 2.5), arrowprops={'arrowstyle': '->'})
plt.text(0.5, 0.5, 'note')
# %%
for k in range(3):
    plt.plot(np.arange(4) + k, label=f'serie {k}')
plt.legend(loc='best')
# %%
fig, axs = plt.subplots(1, 2, constrained_layout=True, figsize=(6, 2.5))
axs[0].semilogy(np.arange(1, 6), 10.0 ** np.arange(5))
axs[1].loglog([1, 10, 100], [1, 100, 10000])
fig.get_constrained_layout()
# %%
fig, axs = plt.subplots(5, 5, figsize=(8, 8))
for i, ax in enumerate(axs.flat):
    ax.plot(np.sin(np.linspace(0, i, 20)))
    ax.set_xticks([])
plt.tight_layout()
plt.show()
# %%
plt.figure(figsize=(2, 2))
# %%
empty = plt.figure()
plt.show()
print(len(empty.axes))
# %%
with plt.style.context('dark_background'):
    plt.plot([1, 3, 2])
    plt.show()
plt.rcParams['axes.facecolor']
# %%
plt.rcParams.update({'font.size': 14, 'lines.linewidth': 3})
plt.plot([2, 2, 3])
plt.title('big fonts')
# %%
plt.rcdefaults()
fig = plt.figure(figsize=(6, 3), dpi=72)
ax = fig.add_subplot(1, 2, 1)
ax.step([1, 2, 3], [3, 1, 2])
ax = fig.add_subplot(1, 2, 2, projection='polar')
ax.plot(np.linspace(0, 2 * np.pi, 30), np.ones(30))
fig
# %%
mosaic = plt.figure(layout='constrained').subplot_mosaic('AB;CC')
sorted(mosaic)
# %%
X, Y = np.meshgrid(np.linspace(-2, 2, 30), np.linspace(-2, 2, 30))
cs = plt.contourf(X, Y, np.exp(-X ** 2 - Y ** 2), levels=8)
plt.clabel(plt.contour(X, Y, np.exp(-X ** 2 - Y ** 2), colors='k'))
len(cs.levels)
# %%
fig = plt.figure()
ax3 = fig.add_subplot(projection='3d')
ax3.scatter(*np.random.rand(3, 20))
plt.show()
# %%
daily = df.groupby('data')['valor'].sum()
ax = daily.plot(figsize=(7, 3), title='diário')
ax.xaxis.get_major_formatter().__class__.__name__
# %%
daily.resample('W').sum().plot(kind='area', alpha=0.4)
plt.show()
# %%
df.pivot_table(index='regiao', columns='produto', values='quantidade', aggfunc='sum').plot(kind='bar', stacked=True, figsize=(7, 4))
# %%
df[['quantidade', 'preco_unitario']].plot(kind='box')
# %%
df['valor'].plot(kind='kde')
# %%
df.plot.hexbin(x='quantidade', y='valor', gridsize=10)
# %%
df['regiao'].value_counts().plot.pie(autopct='%.0f%%', ylabel='')
plt.show()
# %%
pd.plotting.scatter_matrix(df[['quantidade', 'valor']], figsize=(4, 4)).shape
# %%
fig, ax = plt.subplots()
ax.plot([1, 2, 3])
fig.savefig('gallery.png')
plt.close(fig)
plt.show()
from PIL import Image as PILImage
PILImage.open('gallery.png').size
# %%
fig, ax = plt.subplots()
ax.plot([3, 2, 1])
fig.set_size_inches(3, 2)
fig.set_dpi(200)
# %%
plt.plot([1, 2], [1, 2, 3])
# %%
plt.subplots(0, 1)
# %%
plt.get_cmap('no_such_cmap')
# %%
plt.style.use('no_such_style')
# %%
ax = plt.gca()
ax.set_xscale('sideways')
# %%
plt.title(r'$\frac{1}$')
# %%
plt.close('all')
plt.plot([1, 2])
plt.clf()
# %%
figs = [plt.figure(figsize=(2, 1)) for _ in range(3)]
for f in figs:
    f.add_subplot().plot([1, 0])
plt.close(figs[1])
# %%
plt.rcParams['font.family'] = 'Arial'
plt.plot(['a', 'b'], [1, 2])
plt.title('a font this machine lacks')
# %%
plt.rcParams['font.family'] = 'sans-serif'
with plt.xkcd():
    plt.plot([1, 2, 1])
# %%
from matplotlib_inline.backend_inline import set_matplotlib_formats
set_matplotlib_formats('svg')
plt.plot([1, 2])
# %%
from IPython.display import set_matplotlib_formats as ipython_formats
ipython_formats('retina')
plt.matshow(np.arange(16).reshape(4, 4))
# %%
set_matplotlib_formats('png', dpi=40)
plt.plot([2, 1])
# %%
%config InlineBackend.figure_formats
# %%
%config InlineBackend.print_figure_kwargs = {'bbox_inches': None}
%config InlineBackend.close_figures = False
kept = plt.figure(figsize=(2, 2))
plt.plot([1, 2])
# %%
plt.plot([3, 1])
len(plt.get_fignums())
# %%
plt.figure(figsize=(3, 1))
plt.plot([1, 3])
plt.show()
len(plt.get_fignums())
# %%
%config InlineBackend.close_figures = True
%config InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight'}
%config InlineBackend.print_figure_kwargs
# %%
plt.close('all')
%matplotlib --list
# %%
import os
os.remove('gallery.png')
