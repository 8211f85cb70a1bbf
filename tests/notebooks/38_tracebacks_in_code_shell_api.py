# %%
import traceback, sys, json
def parse(text):
    return json.loads(text)
try:
    parse('{"a": 1,}')
except Exception:
    traceback.print_exc()
print('after')
# %%
try:
    parse('[1, 2')
except json.JSONDecodeError as e:
    msg = traceback.format_exc()
    print(type(e).__name__, e.pos, e.lineno, e.colno)
msg.splitlines()[-1], len(msg.splitlines())
# %%
try:
    {'a': 1}['b']
except KeyError:
    etype, value, tb = sys.exc_info()
    print(etype.__name__, repr(value), tb.tb_lineno)
sys.exc_info()
# %%
traceback.print_exception(ValueError('made by hand'))
traceback.format_exception_only(TypeError, TypeError('bad type'))
# %%
import logging
logging.basicConfig(level=logging.INFO, format='%(levelname)s:%(name)s:%(message)s')
log = logging.getLogger('etl')
try:
    int('12a')
except ValueError:
    log.exception('could not convert')
log.info('continuing')
# %%
parse('{"a": 1,}')
# %%
b'caf\xe9'.decode('utf-8')
# %%
'naïve'.encode('ascii')
# %%
try:
    open('/no/such/dir/data.csv')
except OSError as e:
    print(type(e).__name__, e.errno, e.strerror, e.filename)
# %%
import numpy as np
np.linalg.inv(np.array([[1.0, 2.0], [2.0, 4.0]]))
# %%
import io
import pandas as pd
pd.read_csv(io.StringIO('a,b\n1,2\n3,4,5\n'))
# %%
raise
# %%
class Weird(Exception):
    def __str__(self):
        raise RuntimeError('no str')
raise Weird('x')
# %%
raise ValueError
# %%
raise ValueError('')
# %%
raise KeyError(('region', 2024))
# %%
raise RuntimeError('first line\nsecond line\n  indented third')
# %%
class BadRequest(Exception):
    def __init__(self, code, reason):
        super().__init__(code, reason)
        self.code = code
raise BadRequest(400, 'missing field')
# %%
import inspect
frame = inspect.currentframe()
frame.f_code.co_name, __name__, type(__builtins__).__name__, '__IPYTHON__' in dir(__builtins__) or hasattr(__builtins__, '__IPYTHON__')
# %%
hasattr(sys, 'ps1'), sys.flags.interactive, callable(sys.excepthook)
# %%
def hook(etype, value, tb):
    print('custom hook:', etype.__name__)
sys.excepthook = hook
1 / 0
# %%
sys.excepthook = sys.__excepthook__
ip = get_ipython()
ip.push({'pushed': 21})
ip.ev('pushed * 2')
# %%
ip.ex('from_ex = pushed + 1')
from_ex
# %%
r = ip.run_cell('41 + 1')
print(type(r).__name__, r.success, r.result)
# %%
r = ip.run_cell('undefined_thing + 1')
print(r.success, type(r.error_in_exec).__name__)
# %%
r = ip.run_cell('print("inner print")\n[i * i for i in range(4)]')
r.result, r.execution_count, r.info.raw_cell.splitlines()[0], Out.get(max(Out)) if Out else None
# %%
r = ip.run_cell('7 * 6', silent=True)
r.result, r.info.silent
# %%
r = ip.run_cell('value = 3;')
r.result, value
# %%
r = ip.run_cell('def broken(:\n    pass')
r.success, type(r.error_before_exec).__name__
# %%
def helper(n):
    return 10 // n
r = ip.run_cell('helper(0)')
print('outer goes on', r.success)
# %%
ip.set_next_input('print(1)')
# %%
def on_zero(shell, etype, value, tb, tb_offset=None):
    print('handled:', etype.__name__, value)
ip.set_custom_exc((ZeroDivisionError,), on_zero)
1 / 0
# %%
10 / 0.0
# %%
class AppError(ArithmeticError):
    pass
raise AppError('subclass of a handled type')
# %%
ip.run_cell('1 / 0')
print('outer cell continues')
# %%
{}['missing']
# %%
ip.set_custom_exc([ValueError], None)
# %%
ip.set_custom_exc((ValueError,), None)
int('x')
# %%
ip.set_custom_exc((), None)
1 / 0
# %%
import tracemalloc
tracemalloc.start()
data = [list(range(100)) for _ in range(100)]
current, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
current > 0, peak >= current
# %%
from IPython.display import display, update_display, clear_output
display('step 0', display_id='progress')
for i in range(1, 4):
    update_display(f'step {i}', display_id='progress')
print('done')
# %%
for i in range(3):
    clear_output(wait=True)
    print(f'epoch {i}: loss={1 / (i + 1):.3f}')
# %%
import timeit
t = timeit.timeit('sum(range(100))', number=10)
isinstance(t, float), t > 0
