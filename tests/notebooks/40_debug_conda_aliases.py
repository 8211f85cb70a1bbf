# %%
%autoawait
# %%
%autoawait asyncio
# %%
import asyncio
await asyncio.sleep(0)
'still async'
# %%
%alias_magic nb40_t time
# %%
%nb40_t 2 + 2
# %%
%%nb40_t
total = sum(range(10))
total
# %%
%alias_magic --line nb40_hist history "-l 1"
# %%
%alias_magic --line nb40_hist2 history -p "-l 1"
# %%
%alias_magic nb40_x no_such_magic
# %%
%alias_magic --cell nb40_y pwd
# %%
%alias_magic nb40_z
# %%
def load(path):
    rows = read_rows(path)
    return len(rows)
def read_rows(path):
    header = path.split('/')
    offset = 1
    size = 0
    return header[offset] / size
# %%
load('data/sales.csv')
# %%
%debug
# %%
%conda list
# %%
%conda install -y requests
# %%
%colors nocolor
# %%
load('x/y')
# %%
%colors
# %%
%colors Neutral
# %%
import os
if os.path.exists('nb40_step.py'):
    os.remove('nb40_step.py')
# %%
%%writefile nb40_step.py
step_result = 'ran'
print('step:', __name__, __file__)
# %%
%run nb40_step.py
'__file__' in globals(), step_result
# %%
%run -i nb40_step.py
__file__, step_result
# %%
import __main__
__main__.__file__
# %%
%run nb40_step.py
__file__
