# %%
%autosave 0
# %%
%autosave 120
# %%
%autosave soon
# %%
array = 'mine'
%pylab inline
# %%
type(plt).__name__, type(np).__name__, linspace(0, 1, 3), array is np.array, figsize.__module__, display.__module__
# %%
names = %who_ls
[n for n in names if n in ('np', 'plt', 'linspace', 'array', 'figsize', 'display', 'names')]
# %%
x = linspace(0, 2 * pi, 50)
plot(x, sin(x))
title('pylab style')
# %%
%pylab --no-import-all inline
# %%
fig = plt.figure(figsize=(3, 2))
plt.bar(['a', 'b'], [1, 2]);
# %%
display, clear_output
# %%
from IPython.display import display as d2, update_display
d2 is display, update_display
