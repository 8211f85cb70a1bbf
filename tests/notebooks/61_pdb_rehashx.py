# %%
# %pdb's state and messages (with it on, an error would open ipykernel's
# debugger, which asks E2B's kernel for a command it cannot read:
# test_executor_basic checks what cellvm does then).
%pdb
# %%
get_ipython().call_pdb
# %%
%pdb off
# %%
%pdb 1
# %%
%pdb bogus
# %%
%pdb 0
# %%
%pdb
# %%
%pdb OFF
# %%
%rehashx
# %%
%echo hi there
# %%
%uname -s
# %%
%%capture
aliases = dict(%alias)
# %%
print(aliases.get('python311'), aliases.get('ls'), 'cd' in aliases, 'pdb' in aliases)
# %%
'uname' in get_ipython().db['syscmdlist']
