# %%
import numpy as np, pandas as pd, os, sys, json
alpha_value = 1
alpha_list = [1]
beta_frame = pd.DataFrame()
%psearch alpha*
print('psearch pages its result')
# %%
%psearch -e builtin alpha*
# %%
%psearch a* int
# %%
%psearch np.*int8*
# %%
%psearch -i ALPHA*
# %%
%psearch -l
# %%
%psearch -x a*
# %%
def square(x):
    return x * x
with open('nb55_mod.py', 'w') as f:
    f.write('VALUE = 1\n')
%pfile square
# %%
%pfile nb55_mod.py
# %%
%pfile nb55_mod
# %%
%pfile no_such_thing
# %%
%pfile len
# %%
%pfile json
# %%
%pfile json.dumps
# %%
%pfile alpha_list
# %%
x = 10
y = x * 2
# %%
%save -f nb55_saved.py {len(In) - 2}
# %%
print(open('nb55_saved.py').read())
# %%
%save nb55_saved.py 1
# %%
%save -a nb55_saved.py square
# %%
snippet = 'z = 3\n'
%save -a nb55_saved snippet
# %%
print(open('nb55_saved.py').read())
# %%
%save -r -f nb55_raw {len(In) - 2}
# %%
%save -f nb55_missing.py no_such_name
# %%
%save
# %%
%macro -q my_macro {len(In) - 14}
print(type(my_macro).__name__, repr(my_macro.value))
# %%
my_macro
# %%
x, y
# %%
%macro shout snippet
# %%
shout
# %%
z
# %%
%macro
# %%
%macro only_name
# %%
both = my_macro + shout
print(both)
# %%
a = 1
b = 2
# %%
In[-2], _i, _ih[-2] == In[-2]
# %%
quit(keep_kernel=True)
# %%
In[-2], _i
# %%
%clear
# %%
%store -z
%store
# %%
%store alpha_value alpha_list
# %%
%store
# %%
del alpha_value
%store -r alpha_value
alpha_value
# %%
%store -r nothing_like_this
# %%
%store square
# %%
%store unknown_var
# %%
%store alpha_list >nb55_store.txt
print(open('nb55_store.txt').read())
# %%
%store -d alpha_value
%store -d alpha_value
# %%
%store -z
%store
# %%
%doctest_mode
# %%
{'b': list(range(40)), 'a': 1}
# %%
pd.DataFrame({'a': [1, 2]})
# %%
1 / 0
# %%
%doctest_mode
# %%
pd.DataFrame({'a': [1, 2]})
# %%
1 / 0
# %%
%xmode Minimal
%doctest_mode
%doctest_mode
# %%
%xmode Context
for f in ['nb55_mod.py', 'nb55_saved.py', 'nb55_raw.ipy', 'nb55_store.txt']:
    if os.path.exists(f):
        os.remove(f)
