# %%
# get_ipython()'s system and getoutput refuse a command ending in '&' (they
# read its output to its end): agents start servers that way.
import sys
ip = get_ipython()
ip.ipython_dir.endswith('.ipython'), ip.profile
# %%
!sleep 0.1 &
# %%
ip.system('echo x &')
# %%
ip.getoutput('echo y &')
# %%
files = !echo z &
# %%
%sx echo w &
# %%
ip.system_piped('echo piped')
# %%
ip.system_piped('echo piped &')
# %%
try:
    1/0
except Exception:
    ip.showtraceback()
print('the cell goes on')
# %%
def f():
    return 1 / 0
try:
    f()
except Exception:
    ip.showtraceback()
# %%
try:
    f()
except Exception:
    ip.showtraceback(sys.exc_info())
# %%
try:
    f()
except Exception:
    info = sys.exc_info()
ip.showtraceback(info)
# %%
f()
# %%
ip.showtraceback()
# %%
ip.ask_yes_no('sure?')
# %%
ip.magic('pwd') == ip.run_line_magic('pwd', '')
# %%
ip.set_next_input('print(1)')
