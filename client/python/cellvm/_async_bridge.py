"""Blocking SDK calls off the event loop, and user callbacks back on it.

AsyncSandbox runs the sync SDK (thread-safe: one connection, any number of
threads with requests in flight) in worker threads. The workers are daemon
threads of a pool without a cap: a call may wait for minutes (a cell, a
command, a watch) and must never hold up another one, as asyncio's default
executor (min(32, cpus + 4) threads) would, nor hold up interpreter exit.
"""

import asyncio
import concurrent.futures
import contextvars
import inspect
import queue
import threading
from typing import Any, Callable, Optional

_IDLE_S = 30.0
"""A worker idle this long exits."""


class _Workers:
    """Daemon threads for blocking calls: an idle worker takes the next call,
    a new one starts when none is idle."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a job that no submit() has claimed
        self._jobs = queue.SimpleQueue()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            grow = self._idle == 0
            if not grow:
                self._idle -= 1  # that worker is claimed for this job
        self._jobs.put(job)
        if grow:
            threading.Thread(target=self._work, name="cellvm-async", daemon=True).start()

    def _work(self):
        while True:
            try:
                job = self._jobs.get(timeout=_IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody claimed a worker: one may go
                        self._idle -= 1
                        return
                continue  # claimed: its job is on the way
            job()
            del job  # drop its references before idling
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()


def start(fn: Callable, *args, **kwargs) -> "asyncio.Future":
    """Runs fn(*args, **kwargs) in a worker thread; a future of the running
    loop gets its result or exception. Cancelling the future abandons the
    call (it finishes in its thread, its result is dropped)."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    ctx = contextvars.copy_context()

    def settle(ok, value):
        if fut.done():
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def job():
        try:
            ok, value = True, ctx.run(fn, *args, **kwargs)
        except BaseException as e:  # handed to the awaiting task
            ok, value = False, e
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for it

    _WORKERS.submit(job)
    return fut


def forget(fut: "asyncio.Future") -> None:
    """Marks an exception of `fut` as seen: nobody may await it any more."""
    fut.add_done_callback(lambda f: f.cancelled() or f.exception())


def spawn(fn: Callable, *args, **kwargs) -> None:
    """Runs fn(*args, **kwargs) in a worker thread; nobody waits for it."""
    forget(start(fn, *args, **kwargs))


async def call(fn: Callable, *args, **kwargs) -> Any:
    """await fn(*args, **kwargs) run in a worker thread."""
    return await start(fn, *args, **kwargs)


async def acquire(fn: Callable, release: Callable[[Any], Any], *args, **kwargs) -> Any:
    """await fn(*args, **kwargs), something that must be released (a
    sandbox, a command, a watch). If the awaiting task is cancelled before
    it arrives, release(it) runs once fn returns, in the worker: the loop
    may be gone by then (asyncio.run() ends after a wait_for timeout)."""
    lock = threading.Lock()
    abandoned = handed = False

    def make():
        nonlocal handed
        made = fn(*args, **kwargs)
        with lock:
            if not abandoned:
                handed = True
                return made
        release(made)
        return None

    fut = start(make)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        forget(fut)
        with lock:
            abandoned = True
            in_flight = handed
        if in_flight:  # on its way to `fut`: release it from there
            fut.add_done_callback(
                lambda f: f.cancelled() or f.exception() is not None or spawn(release, f.result()))
        raise


async def wait_or_cancel(fut: "asyncio.Future", cancel: Callable[[], Any]) -> Any:
    """await `fut` (a call started by start()). If the awaiting task is
    cancelled, runs `cancel()` in a worker (it makes the call end early:
    sets an abort event, kills a command), waits for the call to end, then
    lets the cancellation propagate: what the call started in the sandbox
    has stopped by then."""
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        forget(fut)
        try:
            await call(cancel)
            await fut
        except asyncio.CancelledError:
            raise  # cancelled again: stop waiting (cancel() has run or runs)
        except Exception:
            pass  # how the call ended does not matter now
        raise


def on_loop(loop: "asyncio.AbstractEventLoop", handler: Optional[Callable]) -> Optional[Callable]:
    """`handler` as a plain function a worker thread may call: each call runs
    handler(arg) on `loop` (awaiting it if it returns an awaitable, as E2B
    does) and returns once it is done, so handlers run one at a time in the
    order of the output, on the loop's thread (they may touch asyncio
    objects), with the context variables of the task that called on_loop().
    What the handler raises is raised in the worker."""
    if handler is None:
        return None
    ctx = contextvars.copy_context()

    async def run(arg):
        result = handler(arg)
        if inspect.isawaitable(result):
            await result

    def call_on_loop(arg):
        done = concurrent.futures.Future()

        def settle(task):
            if task.cancelled():
                done.set_exception(concurrent.futures.CancelledError())
            elif task.exception() is not None:
                done.set_exception(task.exception())
            else:
                done.set_result(None)

        def begin():
            # A task made inside ctx runs in a copy of it.
            ctx.run(loop.create_task, run(arg)).add_done_callback(settle)

        loop.call_soon_threadsafe(begin)
        return done.result()

    return call_on_loop
