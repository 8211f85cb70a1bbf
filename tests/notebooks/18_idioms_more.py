# %%
import pandas as pd
pd.set_option('display.max_rows', 6)
pd.DataFrame({'v': range(20)})
# %%
pd.reset_option('display.max_rows')
df = pd.DataFrame({'a': [1, 2, None], 'b': ['x', 'y', 'z']})
df.info()
# %%
df.isna().sum()
# %%
df.dtypes
# %%
%%writefile helper_mod.py
def helper():
    return 'from file'
# %%
import importlib, helper_mod
helper_mod.helper()
# %%
%%timeit -n 2 -r 1
sum(range(10))
# %%
a_var = 1
%xdel a_var
'a_var' in dir()
# %%
%xdel no_such_name
# %%
import numpy as np
x = [1, 2, 3]
name = 'a fairly long string value that goes over fifty characters in all'
arr = np.zeros((3, 4))
%whos list str ndarray
# %%
%matplotlib inline
import matplotlib.pyplot as plt
plt.close('all')
plt.figure()
# %%
%run helper_mod.py
helper()
# %%
%run -i helper_mod.py
helper()
# %%
%%writefile plot_script.py
import matplotlib.pyplot as plt
plt.plot([1, 3, 2])
plt.title('from a script')
# %%
%run plot_script.py
# %%
plt.close('all')
# %%
%run no_such_script.py
# %%
%run
