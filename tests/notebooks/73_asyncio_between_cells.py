# %%
# The event loop runs between cells, as ipykernel's does: tasks and callbacks
# a cell left go on while the kernel waits for the next cell. (What they print
# between cells is left out: E2B's server drops output of an ended execution,
# ipykernel's flush timing decides which cell it lands in.)
import asyncio, time
seen = []
async def tick(tag):
    await asyncio.sleep(0.1)
    seen.append(tag)
    return tag
t1 = asyncio.ensure_future(tick("sync-cell"))
# %%
time.sleep(0.5)
# %%
t1.done(), seen
# %%
t2 = asyncio.create_task(tick("await-cell")); await asyncio.sleep(0)
# %%
time.sleep(0.5)
# %%
t2.done(), t2.result(), seen
# %%
loop = asyncio.get_event_loop()
h = loop.call_later(0.05, seen.append, 'called later')
# %%
time.sleep(0.3)
# %%
seen
# %%
async def fail():
    raise ValueError('in a task')
t3 = asyncio.ensure_future(fail())
# %%
time.sleep(0.2)
# %%
t3.done(), repr(t3.exception())
# %%
async def forever():
    while True:
        await asyncio.sleep(0.05)
t4 = asyncio.ensure_future(forever())
# %%
time.sleep(0.2)
# %%
t4.done(), t4.cancel()
# %%
await asyncio.sleep(0.1)
t4.cancelled()
# %%
fut = loop.create_future()
_ = loop.call_later(0.05, fut.set_result, 7)
# %%
time.sleep(0.2)
# %%
fut.done() and fut.result()
