# %%
# A notebook that shows every expression, as many tutorials set it up
from IPython.core.interactiveshell import InteractiveShell
trait = InteractiveShell.__dict__["ast_node_interactivity"]
InteractiveShell.ast_node_interactivity = "all"
# %%
import pandas as pd
df = pd.DataFrame({"a": [1, 2, 3], "b": [4.5, 5.5, 6.5]})
df.shape
df.dtypes
df.head(2)
# %%
x = 10
x
x * 2
print("between")
x + 1
# %%
for i in range(3):
    i * i
# %%
len(df)
df.sum();
# %%
df.a.mean()
df.b.max()  # a comment at the end
# %%
def f(n):
    return n + 1
f(1)
f(2)
# %%
import sys
sys.displayhook(42)
'after'
# %%
get_ipython().ast_node_interactivity
# %%
1
2
undefined_name
3
# %%
1
break
# %%
%config InteractiveShell.ast_node_interactivity = 'none'
# %%
'the class attribute still decides'
# %%
get_ipython().ast_node_interactivity = 'last'
# %%
if x > 5:
    "big"
else:
    "small"
# %%
[n for n in range(3)]
while x > 8:
    x -= 1
    x
# %%
InteractiveShell.ast_node_interactivity = 'none'
# %%
'the shell attribute still decides'
# %%
del get_ipython().ast_node_interactivity
# %%
1 + 1
2 + 2
# %%
del get_ipython().ast_node_interactivity
# %%
# Back to the trait (the kernel goes on with other notebooks)
InteractiveShell.ast_node_interactivity = trait
# %%
get_ipython().ast_node_interactivity
# %%
1
2
