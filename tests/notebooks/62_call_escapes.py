# %%
# IPython's call escapes at a line's start: / calls with the words as
# arguments, , quotes each word, ; quotes the rest of the line.
def f(*a):
    return a
/f 1 2
# %%
,f a b
# %%
;f a b  c
# %%
,print hello world
# %%
/len [1, 2]
# %%
if True:
    /print 3 4
# %%
x = (1
/2)
x
# %%
y = [1,
;2]
