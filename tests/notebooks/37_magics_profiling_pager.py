# %%
def slow_sum(n):
    total = 0
    for i in range(n):
        total += i * i
    return total
%prun -q slow_sum(1000)
# %%
stats = %prun -q -r slow_sum(2000)
type(stats).__name__, stats.total_calls > 0, sorted(k[2] for k in stats.stats if k[2] == 'slow_sum')
# %%
%prun -s cumulative -l 3 slow_sum(10)
# %%
%%prun -q
x = slow_sum(500)
print('computed', x)
# %%
x
# %%
%prun -q -T profile.txt -D profile.pstats slow_sum(100)
# %%
import pstats
text = open('profile.txt').read()
'function calls' in text, pstats.Stats('profile.pstats').total_calls > 0
# %%
%prun 1 / 0
# %%
%prun -z slow_sum(3)
# %%
%pprint
# %%
{'zeta': list(range(40)), 'alpha': 'x' * 30}, 2.0 / 3
# %%
%precision 2
# %%
[1 / 3, 2 / 3], 1 / 3
# %%
%pprint
# %%
%precision
# %%
{'zeta': list(range(40)), 'alpha': 'x' * 30}
# %%
get_ipython().display_formatter.formatters['text/plain'].pprint
# %%
get_ipython().display_formatter.formatters['text/plain'].pprint = False
{'b': 1, 'a': [1, 2]}, {3, 1, 2}
# %%
get_ipython().display_formatter.formatters['text/plain'].pprint = True
{'b': 1, 'a': [1, 2]}, {3, 1, 2}
# %%
import os
for name in ('notes.txt', 'profile.txt', 'profile.pstats'):
    if os.path.exists(name):
        os.remove(name)
# %%
%%file notes.txt
alpha
beta
# %%
%%file -a notes.txt
gamma
# %%
print(open('notes.txt').read())
# %%
%quickref
# %%
%magic
# %%
%page slow_sum
# %%
%page -r stats
# %%
%page no_such_thing
# %%
%more notes.txt
# %%
%less missing_file.txt
# %%
%more
# %%
%pinfo2 slow_sum
# %%
%automagic
# %%
pwd
# %%
%automagic on
# %%
pwd == %pwd
# %%
%automagic off
# %%
%automagic 1
# %%
%%writefile tidy_ext.py
def load_ipython_extension(ip):
    print('tidy loaded')
def unload_ipython_extension(ip):
    print('tidy unloaded')
# %%
%load_ext tidy_ext
# %%
%unload_ext tidy_ext
# %%
%unload_ext tidy_ext
# %%
%unload_ext
# %%
%gui
# %%
%killbgscripts
