# %%
import matplotlib.pyplot as plt
plt.style.use('ggplot')
plt.plot([1, 2, 3])
plt.show()
# %%
plt.style.use('default')
%config InlineBackend.figure_format = 'retina'
plt.plot([1, 2, 3])
plt.show()
# %%
%config InlineBackend.figure_format = 'svg'
plt.plot([3, 2, 1])
plt.show()
# %%
%config InlineBackend.figure_format = 'png'
fig, ax = plt.subplots(figsize=(2, 2))
ax.plot([1, 2])
fig
# %%
import matplotlib
matplotlib.rcParams['figure.dpi'] = 50
plt.plot([1])
plt.show()
# %%
matplotlib.rcParams['figure.dpi'] = 100
matplotlib.rcParams['savefig.dpi'] = 'figure'
plt.bar([1, 2], [3, 4])
