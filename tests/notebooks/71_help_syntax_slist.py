# %%
# Help syntax as IPython transforms it (obj?, ?obj, obj??, %magic?, patterns,
# a help line ending a statement), and `x = !cmd` as IPython's SList.
undefined_thing?
# %%
?undefined_thing
# %%
undefined_thing??
# %%
%pinfo undefined_thing
# %%
%pinfo2 undefined_thing
# %%
%pinfo
# %%
len?
# %%
*Warning?
# %%
str.*find*?
# %%
str.*find*??
# %%
%run?
# %%
%timeit?
# %%
%%timeit?
# %%
%lsmagic?
# %%
%notamagic?
# %%
%%timeit??
# %%
x = 1
x?
# %%
x.real?
# %%
x.nope?
# %%
?
# %%
??
# %%
for i in range(1):
    len?
# %%
a = [1]
a[0]?
# %%
%history?
# %%
%%bash?
echo hi
# %%
print('a'); len?
# %%
%psearch *Warning
# %%
*nomatch_at_all*?
# %%
x = len?
# %%
x
# %%
directory = !echo one; echo two
type(directory), type(directory).__module__, type(directory).__name__
# %%
from IPython.utils.text import SList
isinstance(directory, SList), directory.grep('one')
# %%
import pickle
pickle.loads(pickle.dumps(directory)) == directory, type(pickle.loads(pickle.dumps(directory)))
# %%
repr(type(get_ipython().getoutput('echo x')))
