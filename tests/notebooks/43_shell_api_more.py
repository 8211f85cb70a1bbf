# %%
import os
if os.path.exists('nb43_notes.txt'):
    os.remove('nb43_notes.txt')
ip = get_ipython()
ip.run_cell_magic('writefile', 'nb43_notes.txt', 'line one\nline two\n')
# %%
out = ip.run_cell_magic('capture', 'captured', 'print("inside capture")\n1 + 1')
type(captured).__name__, captured.stdout, out
# %%
ip.run_line_magic('time', 'sum(range(10))')
# %%
ip.system('echo from system')
# %%
ip.getoutput('echo a; echo b')
# %%
ip.user_ns is globals(), ip.execution_count > 0, type(ip.user_ns_hidden).__name__
# %%
ip.find_line_magic('timeit') is not None, ip.find_cell_magic('bash') is not None, ip.find_line_magic('nope')
# %%
from IPython.core.magic import Magics, magics_class, line_magic, cell_magic, line_cell_magic
@magics_class
class Tools(Magics):
    @line_magic
    def double(self, line):
        return 2 * int(line)
    @cell_magic
    def upper(self, line, cell):
        print(cell.upper(), end='')
    @line_cell_magic
    def count(self, line, cell=None):
        return len((cell or line).split())
ip.register_magics(Tools)
%double 21
# %%
%%upper
hello magics
# %%
%count a b c
# %%
%%count
x y
z
# %%
%double
# %%
from IPython.utils.capture import capture_output
with capture_output() as cap:
    print('hidden stdout')
    display('hidden display')
print('captured:', repr(cap.stdout), len(cap.outputs))
cap.show()
# %%
%%capture --no-stdout c2
print('visible')
display('not visible')
# %%
c2.outputs[0].data
# %%
%%capture --no-display c3
print('stdout captured')
display('shown anyway')
# %%
c3()
# %%
from IPython.utils import capture
with capture.capture_output(display=False) as cap2:
    print('only stdout')
    print('err', file=sys.stderr) if 'sys' in globals() else None
    display('shown: display not captured')
isinstance(cap2, capture.CapturedIO), cap2.stdout
# %%
with capture_output():
    raise ValueError('inside capture')
# %%
print('stdout restored after the error')
# %%
class Instance(Magics):
    def __init__(self, shell, greeting):
        super().__init__(shell)
        self.greeting = greeting
    @line_magic
    def greet(self, line):
        return f'{self.greeting}, {line}'
Instance = magics_class(Instance)
ip.register_magics(Instance(ip, 'hello'))
%greet world
