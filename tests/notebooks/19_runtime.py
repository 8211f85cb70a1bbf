# %%
import asyncio
async def work(i):
    await asyncio.sleep(0)
    return i * i
results = await asyncio.gather(*(work(i) for i in range(4)))
results
# %%
async def main():
    return await work(5)
coro = main()
asyncio.run(coro)
# %%
await coro
# %%
pending = work(2)
asyncio.get_event_loop().run_until_complete(pending)
# %%
pending.close()
asyncio.get_event_loop()
# %%
asyncio.get_event_loop().is_running()
# %%
async def ticker(n):
    for i in range(n):
        yield i
[i async for i in ticker(3)]
# %%
import logging
logging.basicConfig(level=logging.INFO, format='%(levelname)s:%(name)s:%(message)s', force=True)
logging.info('pipeline started')
logging.debug('not shown')
# %%
log = logging.getLogger('etl')
log.warning('rows dropped: %d', 3)
# %%
import sys
handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter('[%(name)s] %(message)s'))
out_log = logging.getLogger('to_stdout')
out_log.addHandler(handler)
out_log.propagate = False
out_log.setLevel(logging.DEBUG)
out_log.debug('debug on stdout')
# %%
import warnings
def legacy(x):
    warnings.warn('legacy() is deprecated, use modern()', DeprecationWarning, stacklevel=2)
    return x
legacy(1)
# %%
def noisy():
    warnings.warn('inside a function')
    return 'done'
noisy()
# %%
noisy()
# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    noisy()
[str(w.message) for w in caught]
# %%
warnings.warn('a runtime problem', RuntimeWarning)
# %%
class ConfigError(Exception):
    def __init__(self, key):
        super().__init__(key)
        self.key = key
    def __str__(self):
        return f'missing config key {self.key!r}'
raise ConfigError('api_url')
# %%
raise ValueError('bad value', 42)
# %%
try:
    int('x')
except ValueError:
    raise TypeError('conversion failed') from None
# %%
def load(path):
    try:
        return open(path)
    except FileNotFoundError as e:
        raise RuntimeError('could not load data') from e
load('/nonexistent/x.csv')
# %%
raise ExceptionGroup('several failures', [ValueError('a'), TypeError('b')])
# %%
try:
    raise ExceptionGroup('batch', [KeyError('k'), ValueError('v')])
except* KeyError as eg:
    print('handled', [repr(e) for e in eg.exceptions])
except* ValueError as eg:
    print('also handled', len(eg.exceptions))
# %%
[1 / x for x in [1, 0]]
# %%
next(iter([]))
# %%
b'\xff\xfe'.decode('utf-8')
# %%
values = [1, 2, 3]
del values
values
# %%
lenght = 3
lengt
# %%
'text'.uppper()
# %%
x = -1
assert x > 0
# %%
globals()['dynamic_var'] = 99
dynamic_var
# %%
def main():
    print('running main')
if __name__ == '__main__':
    main()
# %%
total: int = 5
__annotations__
# %%
(n := 10) * 2
# %%
nonlocal q
# %%
print('runs first')
for i in range(2):
    pass
break
# %%
def sync():
    await asyncio.sleep(0)
# %%
import dataclasses
from __future__ import annotations
def typed(a: int) -> int:
    return a
typed.__annotations__
# %%
%%time
1 / 0
# %%
%time y = sum(range(100))
y
# %%
import math
math
# %%
sorted(k for k in globals() if not k.startswith('_'))
# %%
pwd
# %%
ls = ['not the ls magic']
# %%
ls
# %%
class Plain:
    pass
Plain()
# %%
import threading
def crash():
    raise RuntimeError('in a thread')
worker = threading.Thread(target=crash, name='worker')
worker.start()
worker.join()
print('main goes on')
