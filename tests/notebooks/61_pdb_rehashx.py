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
%%capture
before = %alias
# %%
%rehashx
# %%
%echo hi there
# %%
%uname -s
# %%
%%capture
aliases = %alias
# %%
aliases = dict(aliases)
print(aliases.get('python311'), aliases.get('ls'), 'cd' in aliases, 'pdb' in aliases)
# %%
'uname' in get_ipython().db['syscmdlist']
# %%
%%capture
# The aliases go again: later notebooks share ipykernel's shell (cellvm's run
# in contexts of their own).
for _n in get_ipython().db['syscmdlist']:
    if _n.replace('.', '') not in dict(before):
        get_ipython().run_line_magic('unalias', _n.replace('.', ''))
after = %alias
# %%
print('uname' in dict(after), after == before, get_ipython().db['syscmdlist'].count('ls') > 0)
