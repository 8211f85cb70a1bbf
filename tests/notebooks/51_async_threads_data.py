# %%
import asyncio, json, csv, io, sqlite3, threading, time
from concurrent.futures import ThreadPoolExecutor
async def fetch(i):
    await asyncio.sleep(0.01 * i)
    return {'id': i, 'ok': i % 2 == 0}
await fetch(1)
# %%
results = await asyncio.gather(*(fetch(i) for i in range(5)))
results
# %%
async def slow():
    await asyncio.sleep(5)
try:
    await asyncio.wait_for(slow(), timeout=0.05)
except asyncio.TimeoutError as e:
    print('timed out:', type(e).__name__)
# %%
async def boom():
    raise ValueError('async failure')
await boom()
# %%
loop = asyncio.get_running_loop()
type(loop).__name__, loop.is_running()
# %%
async def agen():
    for i in range(3):
        yield i
[x async for x in agen()]
# %%
task = asyncio.create_task(fetch(2))
await asyncio.sleep(0.05)
task.done(), task.result()
# %%
def work(n):
    print(f'worker {n}')
    return n * n
with ThreadPoolExecutor(max_workers=1) as pool:
    list(pool.map(work, range(3)))
# %%
def noisy():
    for i in range(3):
        print('thread line', i)
t = threading.Thread(target=noisy)
t.start()
t.join()
print('joined')
# %%
lock = threading.Lock()
counter = 0
def incr():
    global counter
    for _ in range(1000):
        with lock:
            counter += 1
threads = [threading.Thread(target=incr) for _ in range(4)]
[th.start() for th in threads]
[th.join() for th in threads]
counter
# %%
def fails():
    raise RuntimeError('inside thread')
th = threading.Thread(target=fails, name='failing-thread')
th.start()
th.join()
# %%
records = [{'name': 'Ana', 'score': 9.5, 'tags': ['a', 'b']}, {'name': 'Bo', 'score': None, 'tags': []}]
print(json.dumps(records, indent=2))
# %%
json.dumps({'é': 'ü', 'n': float('nan')}), json.dumps({'é': 1}, ensure_ascii=False)
# %%
try:
    json.dumps({'when': time})
except TypeError as e:
    print(e)
# %%
buf = io.StringIO()
w = csv.DictWriter(buf, fieldnames=['name', 'score'])
w.writeheader()
w.writerows({'name': r['name'], 'score': r['score']} for r in records)
buf.getvalue()
# %%
print(buf.getvalue())
list(csv.reader(io.StringIO(buf.getvalue())))
# %%
con = sqlite3.connect(':memory:')
cur = con.cursor()
cur.execute('CREATE TABLE scores (name TEXT, score REAL)')
cur.executemany('INSERT INTO scores VALUES (?, ?)', [('Ana', 9.5), ('Bo', 7.0), ('Cy', 8.25)])
con.commit()
cur.execute('SELECT name, score FROM scores ORDER BY score DESC').fetchall()
# %%
cur.execute('SELECT AVG(score), COUNT(*) FROM scores').fetchone(), cur.description
# %%
con.execute('SELECT * FROM nope')
# %%
con.row_factory = sqlite3.Row
row = con.execute('SELECT * FROM scores LIMIT 1').fetchone()
dict(row), row.keys()
# %%
import pandas as pd
pd.read_sql('SELECT * FROM scores', con).assign(rank=lambda d: d.score.rank(ascending=False))
# %%
pd.DataFrame({'k': [1, 2]}).to_sql('extra', con, index=False)
# %%
con.close()
try:
    con.execute('SELECT 1')
except sqlite3.ProgrammingError as e:
    print(type(e).__name__, e)
