# %%
{'big': 2**70, 'neg': -2**70, 'edge': [2**64, 2**64 - 1, -2**63, -2**63 - 1, -2**64, -2**64 - 1]}
# %%
import math
{'n': 30, 'fact': math.factorial(30)}
# %%
from IPython.display import display
display({'a': 2**70}); print('after')
# %%
import pandas as pd
pd.DataFrame({'big': [2**70, 1]})
# %%
from IPython.display import JSON
JSON({'a': 2**70, 'b': -(10**40)})
# %%
[10**400]
# %%
x = 0
[x, -1, 2**63, 2**63 - 1]
