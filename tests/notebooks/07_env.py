# %%
__name__
# %%
import sys
isinstance(sys.argv, list)
# %%
type(get_ipython()).__name__ in ('ZMQInteractiveShell', 'Shell')
# %%
input('Your name: ')
# %%
!ls FIXTURES | sort
!echo done
# %%
files = !ls FIXTURES
files
# %%
%time sum(range(1000))
# %%
%timeit -n 3 -r 2 sum(range(100))
# %%
%%time
total = 0
for i in range(1000):
    total += i
total
# %%
len
# %%
print
# %%
help(len)
# %%
len?
# %%
sys.exit('bye')
# %%
print('still alive')
# %%
import os
os.environ.get('NO_SUCH_VAR_XYZ')
# %%
%env NO_SUCH_VAR_XYZ=1
# %%
import this_does_not_exist
# %%
sys.exit(0)
# %%
sys.version_info[:2] >= (3, 8)
# %%
In[-2]
# %%
_
# %%
%pip --version
# %%
%pip list 2>/dev/null | grep -i -E "^(numpy|pandas) "
# %%
%who
# %%
who_names = %who_ls
who_names
# %%
%who str
# %%
%who complex
