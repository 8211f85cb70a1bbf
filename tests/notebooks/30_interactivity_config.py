# %%
%config ZMQInteractiveShell.ast_node_interactivity
# %%
%config InteractiveShell.ast_node_interactivity
# %%
%config InteractiveShell.ast_node_interactivity = 'last_expr_or_assign'
# %%
total = sum(range(10))
# %%
total += 5
# %%
label: str = "done"
# %%
a, b = 1, 2
# %%
items = [1, 2]
items.append(3)
# %%
class Box:
    pass
box = Box()
box.size = 3
# %%
total = 1; total = 2
# %%
first = second = 7
# %%
%config ZMQInteractiveShell.ast_node_interactivity
# %%
get_ipython().ast_node_interactivity = 'sometimes'
# %%
get_ipython().ast_node_interactivity = 'last'
# %%
for k in range(2):
    k
    k + 10
# %%
try:
    1 / 0
except ZeroDivisionError:
    'caught'
# %%
get_ipython().ast_node_interactivity = 'none'
# %%
3
# %%
x = 4
x
print('shown:', x)
# %%
%config ZMQInteractiveShell.ast_node_interactivity = 'all'
# %%
import numpy as np
arr = np.arange(4)
arr
arr.sum()
print('printed')
arr.mean();
# %%
async def twice(v):
    return v * 2
await twice(2)
await twice(3)
# %%
get_ipython().ast_node_interactivity = 'last_expr'
# %%
5
6
