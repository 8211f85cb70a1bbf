# %%
import logging, sys, warnings, time
log = logging.getLogger('pipeline')
log.info('not shown: no handler, lastResort is WARNING')
log.warning('lastResort prints this on stderr')
# %%
log.error('rows=%d bad=%s', 10, ['x'])
# %%
logging.getLogger().handlers, logging.getLogger().level
# %%
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(levelname)s %(name)s: %(message)s')
log.info('now on stdout via the root handler')
# %%
logging.basicConfig(level=logging.DEBUG, format='ignored %(message)s')
log.debug('still INFO level: not shown')
logging.getLogger().level
# %%
child = logging.getLogger('pipeline.load')
child.addHandler(logging.StreamHandler())
child.warning('printed twice: own handler and root')
# %%
child.propagate = False
child.warning('only once now')
# %%
def load(path):
    try:
        open(path)
    except OSError:
        log.exception('could not open %s', path)
load('/no/such/file.csv')
# %%
fmt = logging.Formatter('%(levelname)s:%(funcName)s:%(lineno)d:%(message)s')
logging.getLogger().handlers[0].setFormatter(fmt)
def step():
    log.info('inside step')
step()
log.warning('top level')
# %%
logging.captureWarnings(True)
warnings.warn('routed through logging')
logging.captureWarnings(False)
# %%
logging.getLogger().handlers.clear()
logging.getLogger().setLevel(logging.WARNING)
# %%
for i in range(1, 6):
    print(f'\rprocessing batch {i}/5', end='', flush=True)
    time.sleep(0.02)
print('\ndone')
# %%
sys.stdout.write('loading...')
from IPython.display import display, Markdown
display(Markdown('**loaded**'))
sys.stdout.write(' ok\n')
# %%
sys.stdout.write('y' * 20000)
# %%
print('emoji 🚀✅ café naïve 中文 한국어 e\u0301 👩\u200d💻')
# %%
'🚀 ' + 'e\u0301', len('👩\u200d💻')
# %%
print('\x1b[1;31mred bold\x1b[0m \x1b[2Kcleared \x1b[32mgreen\x1b[0m')
# %%
sys.stdout.encoding, sys.stdout.isatty(), sys.stderr.isatty()
# %%
try:
    fd = sys.stdout.fileno()
    print('fileno ok', isinstance(fd, int))
except Exception as e:
    print(type(e).__name__, e)
# %%
print('to the real stdout', file=sys.__stdout__, flush=True)
time.sleep(0.3)
print('cell stdout')
# %%
bad = b'caf\xe9'.decode('utf-8', 'surrogateescape')
print(repr(bad))
bad
# %%
try:
    answer = input('Continue? [y/n] ')
except Exception as e:
    print(type(e).__name__, '-', e)
# %%
import getpass
try:
    token = getpass.getpass('API token: ')
except Exception as e:
    print(type(e).__module__, type(e).__name__, e)
# %%
class DataQualityWarning(UserWarning):
    pass
warnings.warn('12 rows have nulls', DataQualityWarning)
# %%
for i in range(3):
    warnings.warn('repeated in a loop')
# %%
warnings.filterwarnings('ignore', message='.*have nulls')
warnings.warn('5 rows have nulls', DataQualityWarning)
warnings.warn('other message', DataQualityWarning)
# %%
warnings.filterwarnings('ignore', category=DataQualityWarning)
warnings.warn('silenced', DataQualityWarning)
print('after silenced')
# %%
import numpy as np
a = np.array([1.0, 0.0, -1.0])
np.log(a)
# %%
np.sqrt(a), a / 0
# %%
with np.errstate(divide='ignore', invalid='ignore'):
    r = a / 0
r
# %%
old = np.seterr(all='raise')
try:
    a / 0
except FloatingPointError as e:
    print('caught:', e)
finally:
    np.seterr(**old)
# %%
np.mean(np.array([]))
# %%
with warnings.catch_warnings():
    warnings.simplefilter('error', RuntimeWarning)
    np.log(np.array([-1.0]))
# %%
import pandas as pd
df = pd.DataFrame({'g': ['a', 'b', 'a'], 'v': [1, 2, 3], 't': ['x', 'y', 'z']})
df.mean()
# %%
df[df.v > 1]['v'] = 0
# %%
%%writefile legacy_api.py
import warnings
def old_function():
    warnings.warn('old_function is deprecated', DeprecationWarning)
    return 1
def caller_level():
    warnings.warn('use new_function instead', DeprecationWarning, stacklevel=2)
    return 2
# %%
import legacy_api
legacy_api.old_function()
# %%
legacy_api.caller_level()
# %%
import contextlib, io
buf = io.StringIO()
with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
    print('hidden')
    warnings.warn('hidden warning too')
buf.getvalue()
# %%
print('start')
time.sleep(0.2)
print('middle', file=sys.stderr, flush=True)
time.sleep(0.1)
print('end')
# %%
sys.stdout.write(b'raw bytes')
# %%
sys.stdout.writelines(['first\n', 'second\n'])
sys.stdout.closed, sys.stdout.writable(), sys.stdout.readable(), sys.stdout.errors
# %%
sys.stdout.flush()
print()
print(end='')
# %%
import os
os.write(1, b'straight to fd 1\n')
time.sleep(0.3)
# %%
print('to the real stderr', file=sys.__stderr__, flush=True)
time.sleep(0.3)
# %%
import threading
worker = threading.Thread(target=lambda: print('from a worker thread'))
worker.start()
worker.join()
# %%
warnings.warn('not yet, but soon', PendingDeprecationWarning)
warnings.warn(RuntimeWarning('a warning instance'))
# %%
def show_on_stdout(message, category, filename, lineno, file=None, line=None):
    print(f'[{category.__name__}] {message}')
saved_showwarning = warnings.showwarning
warnings.showwarning = show_on_stdout
warnings.warn('custom display')
warnings.showwarning = saved_showwarning
# %%
np.float64(1.0) / 0
# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    np.array([1.0, 2.0]) / np.array([0.0, 0.0])
    pd.Series([1, 2]).astype('int8').sum()
[(w.category.__name__, str(w.message)) for w in caught]
# %%
os.remove('legacy_api.py')
# %%
# ipykernel's OutStream: no binary buffer, write() refuses bytes in its own frame
import sys
hasattr(sys.stdout, "buffer"), hasattr(sys.stderr, "buffer")
# %%
sys.stdout.write(b"bytes")
# %%
print("lone surrogates:", "\udcff", "\udce2\udc82\udcac", "end")
# %%
# fileno() is the kernel's own stdout before the capture: not the cell's output
import os, subprocess
os.write(sys.stdout.fileno(), b"via fileno\n"), os.write(1, b"via fd 1\n")
# %%
subprocess.run(["echo", "child given sys.stdout"], stdout=sys.stdout).returncode
# %%
sys.stdout.writelines(["a\n", "b\n"])
sys.stdout.writelines(["c\n", b"d\n"])
