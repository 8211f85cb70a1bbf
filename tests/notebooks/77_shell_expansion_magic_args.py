# Expansion of ! lines and magic lines (IPython's DollarFormatter), and the
# arguments IPython's magics refuse.
# %%
x = 5
fname = "data.csv"
!echo '$x' "$x" '{x}'
# %%
!echo 'cost: $$5' $$HOME "a$$b" "[$$]" | tr -d 0-9
# %%
!echo $x.real {x*2} {fname[1:3]} {x!r} {fname!r} $nosuch
# %%
!echo {nosuch} $x
# %%
def f():
    y = 3
    !echo inside $y $x
    out = !echo $y$y
    return out
f()
# %%
def g():
    n = 7
    %env CELLVM_NB77=$n
g()
!echo $CELLVM_NB77
# %%
%%bash -s $x
echo arg $1
# %%
%%writefile
x
# %%
%%timeit
# %%
%%time x = 1
y = x + 1
# %%
%%capture --bogus
print(1)
# %%
%history -l notanumber
# %%
%rerun -l x
# %%
%xmode nosuch
# %%
%%script
echo hi
# %%
%%capture cap --no-stderr
print("kept")
# %%
cap.stdout
# %%
%%nosuchmagic
x
# %%
%%pwd
x
# %%
%rerun -l 0
# %%
%rerun -l -2
# %%
%history -l 2
