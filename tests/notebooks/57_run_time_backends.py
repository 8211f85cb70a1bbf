# %%
%%writefile nb57_tool.py
import sys
print('argv:', sys.argv[1:])
print('name:', __name__)
def main():
    return 42
if __name__ == '__main__':
    result = main()
# %%
%run -t nb57_tool.py a b
# %%
%run -n nb57_tool.py
'result' in dir(), main()
# %%
%run -m json.tool --help
# %%
%run -m nb57_tool x
# %%
%%writefile nb57_fail.py
def inner():
    raise KeyError('from script')
inner()
# %%
%run -e nb57_fail.py
print('after -e')
# %%
%run nb57_fail.py
# %%
%run nb57_tool.py nb57_*.py '*.none' nb57_\*.py
# %%
%run -G nb57_tool.py nb57_*.py
# %%
%run -t -N 2 nb57_tool.py
# %%
%run -p -l 3 -s cumulative nb57_tool.py
# %%
%time undefined_thing
# %%
%%time
x = 1
raise ValueError('in %%time')
# %%
%timeit undefined_thing
# %%
%%timeit -n 2 -r 2 data = list(range(100))
sorted(data)
# %%
%time
# %%
%timeit
# %%
%%time
# only a comment
# %%
%time x = [i for i in range(10)]; len(x)
# %%
%matplotlib --list
# %%
%matplotlib nosuchbackend
# %%
import os
for f in ['nb57_tool.py', 'nb57_fail.py']:
    os.remove(f)
