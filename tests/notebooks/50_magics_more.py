# %%
%%latex
\begin{align}
E &= mc^2 \\
F &= ma
\end{align}
# %%
%%javascript
console.log('hello from js');
element.text('hi');
# %%
%%js
alert(1)
# %%
%%markdown
# Report
| a | b |
|---|---|
| 1 | 2 |
# %%
%%html
<table><tr><td>cell</td></tr></table>
<script>console.log(1)</script>
# %%
%%html --isolated
<b>isolated</b>
# %%
%%svg
<svg width="20" height="20"><circle cx="10" cy="10" r="5"/></svg>
# %%
import numpy as np, pandas as pd
arr = np.zeros((100, 3))
small = np.arange(5, dtype=np.int32)
frame = pd.DataFrame({'a': range(4), 'b': list('wxyz')})
series = frame['a']
name = 'notebook'
count = 42
ratio = 0.5
items = [1, 2, 3]
mapping = {'k': 1}
def helper(): pass
class Thing: pass
# Named types: the shared reference kernel may hold a get_ipython an earlier notebook rebound.
%whos ndarray DataFrame Series int str float list dict type
# %%
%who ndarray
# %%
%whos DataFrame Series int
# %%
%who_ls type int
# %%
%who str float
# %%
t = %timeit -o -q -n 3 -r 2 sum(range(100))
type(t).__name__, t.loops, t.repeat, len(t.all_runs), len(t.timings), t.compile_time >= 0
# %%
%timeit -q -n 1 -r 1 sum(range(10))
# %%
r = %timeit -o -q -n 2 -r 3 pass
r.repeat, r.loops
# %%
%time total = sum(range(10 ** 5))
total
# %%
%%time
s = 0
for i in range(1000):
    s += i
s
# %%
%time print('printed inside %time')
# %%
%env MY_SETTING=on
%env MY_SETTING
# %%
%env NEW_VAR
# %%
%set_env OTHER_VAR 12
import os
os.environ['OTHER_VAR'], os.environ.get('MY_SETTING')
# %%
env = %env
type(env).__name__, 'PATH' in env
# %%
%env -h
# %%
start = os.getcwd()
%cd /tmp
# %%
%cd -q /
os.getcwd()
# %%
%cd -q $start
os.getcwd() == start
# %%
%pwd
# %%
del _dh[:]
%cd -q /usr
%cd -q /usr/lib
%cd -q $start
print(*_dh, sep='\n')
# %%
%cd -
# %%
%cd -q -
%cd --lib
# %%
%cd -q -z
# %%
%cd --no_such_dir_in_history
# %%
%cd -9999
# %%
%cd /no/such/dir
# %%
%dhist
# %%
%dhist 2
# %%
%cd -q $start
%bookmark -r
%bookmark usr /usr
%bookmark here
%bookmark -l
# %%
%cd -b usr
# %%
%cd usr
# %%
%cd -b nope
# %%
%bookmark -d usr
%bookmark -d usr
# %%
%bookmark
# %%
%bookmark a b c
# %%
%bookmark -r
%bookmark -l
%cd -q $start
# %%
files = !ls /
type(files).__name__, 'tmp' in files, files.grep('^t').n.count('tmp') >= 1
# %%
!echo "hello $HOME" | tr a-z A-Z
# %%
!echo {count * 2} $name {ratio}
# %%
!printf 'a\nb\nc\n' | wc -l
# %%
!ls /definitely/missing
# %%
!exit 3
# %%
out = !printf 'x y\n1 2\n'
out.fields(0), out.s, out.l
# %%
%%bash
echo "bash says $((6 * 7))"
echo "to stderr" >&2
exit 0
# %%
%%bash
echo partial
exit 2
# %%
%%sh --out captured
echo into a variable
# %%
captured
# %%
%%writefile nb50_helper.py
def add(a, b):
    return a + b
# %%
%%writefile -a nb50_helper.py
SCALE = 10
# %%
%run nb50_helper.py
add(2, 3) * SCALE
# %%
%pycat nb50_helper.py
# %%
os.remove('nb50_helper.py')
