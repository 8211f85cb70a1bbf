# %%
import asyncio
import time
async def fetch(url, delay):
    await asyncio.sleep(delay)
    return f'{url}: {int(delay * 1000)} ms'
start = time.perf_counter()
pages = await asyncio.gather(fetch('a', 0.05), fetch('b', 0.02), fetch('c', 0.01))
elapsed = time.perf_counter() - start
print(pages)
elapsed < 0.2
# %%
try:
    await asyncio.wait_for(fetch('slow', 1), timeout=0.05)
except asyncio.TimeoutError as e:
    print('timed out:', type(e).__name__, repr(e))
# %%
await asyncio.wait_for(fetch('slow', 1), timeout=0.01)
# %%
async def main():
    async with asyncio.TaskGroup() as tg:
        t1 = tg.create_task(fetch('x', 0.01))
        t2 = tg.create_task(fetch('y', 0.02))
    return t1.result(), t2.result()
await main()
# %%
async def bad(n):
    await asyncio.sleep(0.01)
    raise ValueError(f'bad input {n}')
async def group():
    async with asyncio.TaskGroup() as tg:
        tg.create_task(bad(1))
        tg.create_task(bad(2))
await group()
# %%
try:
    await group()
except* ValueError as eg:
    print(len(eg.exceptions), sorted(str(e) for e in eg.exceptions))
# %%
try:
    asyncio.run(main())
except RuntimeError as e:
    print('RuntimeError:', e)
# %%
loop = asyncio.get_event_loop()
loop.is_running(), type(loop).__name__
# %%
results = await asyncio.gather(bad(3), fetch('ok', 0), return_exceptions=True)
results
# %%
bg = asyncio.create_task(fetch('background', 0.05))
bg.done()
# %%
await asyncio.sleep(0.1)
bg.done(), bg.result()
# %%
loop = asyncio.get_running_loop()
await loop.run_in_executor(None, sum, range(10))
# %%
sem = asyncio.Semaphore(2)
active, peak = 0, 0
async def limited(i):
    global active, peak
    async with sem:
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return i
await asyncio.gather(*(limited(i) for i in range(6))), peak
# %%
async with asyncio.timeout(0.02):
    await asyncio.sleep(1)
# %%
asyncio.get_running_loop().call_later(0.01, print, 'timer fired')
await asyncio.sleep(0.05)
# %%
import nest_asyncio
nest_asyncio.__name__
# %%
async def countdown(n):
    for i in range(n, 0, -1):
        yield i
        await asyncio.sleep(0)
[i async for i in countdown(4)]
# %%
queue = asyncio.Queue()
async def producer():
    for i in range(3):
        await queue.put(i)
    await queue.put(None)
async def consumer():
    got = []
    while (item := await queue.get()) is not None:
        got.append(item * 10)
    return got
_, consumed = await asyncio.gather(producer(), consumer())
consumed
# %%
import threading
lock = threading.Lock()
totals = []
def work(n):
    s = sum(i * i for i in range(n))
    with lock:
        totals.append(s)
threads = [threading.Thread(target=work, args=(10_000 * (i + 1),)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
sorted(totals)
# %%
def report():
    time.sleep(0.05)
    print('worker: finished')
threading.Thread(target=report).start()
print('main: started worker')
time.sleep(0.2)
# %%
threading.active_count() >= 1, threading.current_thread().name
# %%
from concurrent.futures import ThreadPoolExecutor, ProcessPoolExecutor, as_completed
def square(x):
    return x * x
with ThreadPoolExecutor(max_workers=4) as ex:
    list(ex.map(square, range(8)))
# %%
with ThreadPoolExecutor(max_workers=2) as ex:
    futures = {ex.submit(square, n): n for n in [3, 1, 2]}
    done = sorted((futures[f], f.result()) for f in as_completed(futures))
done
# %%
with ThreadPoolExecutor() as ex:
    fut = ex.submit(lambda: 1 / 0)
fut.result()
# %%
with ProcessPoolExecutor(max_workers=2) as ex:
    print(list(ex.map(square, range(6))))
# %%
import multiprocessing as mp
def cube(x):
    return x ** 3
with mp.Pool(2) as pool:
    cubes = pool.map(cube, range(5))
cubes, mp.get_start_method()
# %%
def shout(msg):
    print(f'child says {msg}', flush=True)
p = mp.Process(target=shout, args=('hi',))
p.start()
p.join()
p.exitcode
# %%
import contextvars
request_id = contextvars.ContextVar('request_id', default='none')
request_id.set('req-42')
async def handler():
    return request_id.get()
await handler(), request_id.get()
# %%
request_id.get()
# %%
request_id.set('req-43')
await asyncio.sleep(0)
request_id.set('req-44')
request_id.get()
# %%
request_id.get()
# %%
def numbers():
    for i in range(5):
        print(f'yield {i}')
        yield i
gen = numbers()
next(gen), next(gen)
# %%
list(gen)
# %%
next(gen)
# %%
import sys
old = sys.getrecursionlimit()
sys.setrecursionlimit(80)
def depth(n):
    return depth(n + 1)
try:
    depth(0)
except RecursionError as e:
    print('recursion:', e)
finally:
    sys.setrecursionlimit(old)
# %%
import gc, weakref
class Resource:
    def __init__(self, name):
        self.name = name
    def __del__(self):
        print(f'closing {self.name}')
r = Resource('db')
fin = weakref.finalize(r, print, 'finalizer ran')
del r
gc.collect()
fin.alive
# %%
class Cache:
    pass
c = Cache()
ref = weakref.ref(c)
ref() is c, weakref.getweakrefcount(c)
# %%
del c
ref()
# %%
import atexit
def goodbye():
    print('bye')
atexit.register(goodbye)
# %%
import signal
def on_alarm(signum, frame):
    raise TimeoutError('cell took too long')
signal.signal(signal.SIGALRM, on_alarm)
signal.alarm(1)
try:
    time.sleep(3)
finally:
    signal.alarm(0)
