# %edit (a payload E2B drops, and the messages and errors around it), the
# deprecated %sc, and %loadpy's own frame: compared with ipykernel.
%edit
# %%
%ed
# %%
%edit no_such_name
# %%
%edit no_such_file.py
# %%
def f(): pass
%edit f
# %%
s = "x = 1"
%edit s
# %%
%edit 1
# %%
%edit -p
# %%
%macro mm 1
%edit mm
# %%
import json
%edit json.dumps
# %%
%edit 1/0
# %%
%edit -n
# %%
%edit -n 3 json
# %%
%edit -n x g
# %%
x = 5
%edit x
# %%
%edit -x
# %%
%sc
# %%
%sc -v o2=echo a b
o2, type(o2).__name__, o2.l, o2.s, o2.n
# %%
%sc echo q
# %%
%sc -l
# %%
%sc =echo z
# %%
%sc -l -v o3 = printf 'a\nb'
o3, type(o3).__name__
# %%
%sc bad name=echo z
# %%
%sc -x
# %%
%loadpy no_such_file.py
# %%
%loadpy
# %%
%load
# %%
%load -s f
# %%
def k(): return 1
class C: pass
# %%
%load -s k 29
# %%
%load -s k,g,h 29
# %%
%load -s k,g 29
# %%
%load -r 1 no_such_name
# %%
%load -x
# %%
%save -f saved_history.py
# %%
!cat saved_history.py | head -3
# %%
import json
%load -n json.dumps
# %%
%load -n len
# %%
%load -n no_such_name
# %%
def k2(): return 2
%load -n k2
# %%
%load json.dumps
# %%
# A name that is a file, and the same name with .py: IPython's get_py_filename takes the name as given.
with open("twin", "w") as f:
    f.write("print('twin, as named')\n")
with open("twin.py", "w") as f:
    f.write("print('twin.py')\n")
# %%
%load twin
# %%
%save -f twin_saved.py twin
# %%
%macro twin_m twin
print(twin_m)
# %%
%pfile twin
# %%
%run twin
# %%
%run -m json.tool -- nosuch_file.json
# %%
r = %timeit -n1 -r1 -q -o pass
type(r).__name__, r.loops, r.repeat
# %%
%prun -l 1 -l 0.5 -s cumulative -q 1+1
