# %%
values = [3, 1, 2]
values.sort()
print(values)
# %%
%rerun
# %%
counter = 0
# %%
counter += 1
counter
# %%
%rerun
# %%
counter
# %%
def risky():
    return {}['k']
# %%
risky()
# %%
%rerun
# %%
print('after rerun of an error')
