# %%
import sys
def sum_to(n):
    return 0 if n == 0 else n + sum_to(n - 1)
sys.getrecursionlimit(), sum_to(2500)
# %%
nested = []
for _ in range(2000):
    nested = [nested]
s = repr(nested)
len(s), len(str(nested)), s.count('[')
# %%
nested = []
for _ in range(600):
    nested = [nested]
(nested,)
# %%
def countdown(n):
    while n:
        got = yield n
        n -= 1
    return 'liftoff'
g = countdown(2)
next(g), g.send('x'), next(g, 'done')
# %%
g = countdown(1)
next(g)
next(g)
# %%
import functools, time
def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        print(f'calling {fn.__name__}{args}')
        return fn(*args, **kwargs)
    return wrapper
@logged
def add(a, b):
    """Add two numbers."""
    return a + b
add(2, 3), add.__name__, add.__doc__, add.__wrapped__
# %%
@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(80), fib.cache_info()
# %%
class Temperature:
    def __init__(self, celsius):
        self._c = celsius
    @property
    def fahrenheit(self):
        return self._c * 9 / 5 + 32
    @property
    def kelvin(self):
        if self._c < -273.15:
            raise ValueError('below absolute zero')
        return self._c + 273.15
t = Temperature(25)
t.fahrenheit, t.kelvin
# %%
Temperature(-300).kelvin
# %%
t.fahrenheit = 100
# %%
class Vec:
    __slots__ = ('x', 'y')
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __add__(self, other):
        if not isinstance(other, Vec):
            return NotImplemented
        return Vec(self.x + other.x, self.y + other.y)
    def __mul__(self, k):
        return Vec(self.x * k, self.y * k)
    __rmul__ = __mul__
    def __eq__(self, other):
        return (self.x, self.y) == (other.x, other.y)
    def __repr__(self):
        return f'Vec({self.x}, {self.y})'
Vec(1, 2) + Vec(3, 4), 3 * Vec(1, 1), Vec(1, 2) == Vec(1, 2)
# %%
Vec(1, 2) + 5
# %%
{Vec(1, 2)}
# %%
[3, 1, 'two'].sort()
# %%
people = [('ana', 31), ('bo', 25), ('cy', 31), ('di', 19)]
sorted(people, key=lambda p: (-p[1], p[0])), max(people, key=lambda p: p[1]), min([], default='empty')
# %%
from abc import ABC, abstractmethod
class Shape(ABC):
    @abstractmethod
    def area(self): ...
    @abstractmethod
    def perimeter(self): ...
class Square(Shape):
    def __init__(self, s):
        self.s = s
    def area(self):
        return self.s ** 2
Shape()
# %%
Square(2)
# %%
from typing import NamedTuple, TypedDict, Protocol, runtime_checkable, Optional, List
class Point(NamedTuple):
    x: float
    y: float = 0.0
class Movie(TypedDict):
    title: str
    year: int
@runtime_checkable
class HasArea(Protocol):
    def area(self) -> float: ...
Point(1.5), Point._field_defaults, Movie(title='Up', year=2009), isinstance(Square, HasArea), Optional[List[int]]
# %%
from contextlib import contextmanager, suppress
@contextmanager
def tag(name):
    print(f'<{name}>')
    try:
        yield name.upper()
    finally:
        print(f'</{name}>')
with tag('div') as t, suppress(KeyError):
    print('inside', t)
    {}['missing']
    print('never')
# %%
with tag('p'):
    raise RuntimeError('boom inside')
# %%
class ValidationError(Exception):
    def __init__(self, field, problem):
        super().__init__(field, problem)
        self.field = field
        self.problem = problem
    def __str__(self):
        return f'{self.field}: {self.problem}'
raise ValidationError('email', 'missing @')
# %%
ValidationError('age', 'negative'), str(ValidationError('a', 'b')), ValidationError('a', 'b').args
# %%
class AppError(Exception):
    pass
try:
    int('x')
except ValueError as e:
    raise AppError('could not parse') from e
# %%
raise ExceptionGroup('several', [ValueError('a'), TypeError('b')])
# %%
import warnings
import collections, heapq, bisect
warnings.warn('old api', DeprecationWarning)
warnings.warn('this might be slow', RuntimeWarning)
heapq.nsmallest(2, [5, 1, 4])
# %%
def legacy():
    warnings.warn('legacy() is deprecated', DeprecationWarning, stacklevel=2)
    return 1
legacy()
# %%
import statistics
data = [2.5, 3.1, 4.7, 4.7, 5.0, 6.2]
statistics.mean(data), statistics.median(data), statistics.mode(data), round(statistics.stdev(data), 4), statistics.quantiles(data, n=4)
# %%
statistics.mean([])
# %%
import math
math.log(0)
# %%
math.factorial(20), math.comb(10, 3), math.gcd(12, 18), math.isclose(0.1 + 0.2, 0.3), math.inf, -math.inf, math.nan, math.pi
# %%
heap = []
for prio, task in [(3, 'write'), (1, 'plan'), (2, 'code')]:
    heapq.heappush(heap, (prio, task))
scores = [55, 62, 70, 85, 91]
grades = 'FDCBA'
(heap, heapq.heappop(heap), heapq.nlargest(2, [1, 8, 3, 9])), ([grades[bisect.bisect([60, 70, 80, 90], s)] for s in scores], bisect.bisect_left(scores, 70), bisect.insort(scores, 75), scores)
# %%
import random
random.seed(1234)
random.random(), random.randint(1, 100), random.choice('abcdef'), random.sample(range(100), 5), random.gauss(0, 1)
# %%
import datetime as dt
fixed = time.struct_time((2024, 7, 4, 15, 30, 0, 3, 186, 0))
d0 = dt.datetime(2024, 2, 28, 22, 0)
d1 = d0 + dt.timedelta(hours=5)
(time.strftime('%Y-%m-%d %H:%M:%S %A %j', fixed), time.asctime(fixed)), (d1, d1 - d0, (d1 - d0).total_seconds(), d1.strftime('%d/%m/%Y %I:%M %p'), d1.isoformat(), dt.date(2024, 12, 25) - dt.date(2024, 1, 1))
# %%
from zoneinfo import ZoneInfo
ny = dt.datetime(2024, 3, 10, 12, 0, tzinfo=ZoneInfo('America/New_York'))
ny, ny.astimezone(ZoneInfo('Asia/Tokyo')).isoformat(), ny.tzname()
# %%
import calendar
print(calendar.month(2024, 2))
calendar.isleap(2024), calendar.monthrange(2024, 2), calendar.day_name[0]
# %%
from pprint import pprint, pformat
nested = {'users': [{'name': f'user{i}', 'email': f'user{i}@example.com', 'roles': ['read', 'write'][: i % 2 + 1]} for i in range(3)], 'meta': {'total': 3, 'page': 1}}
pprint(nested)
nested
# %%
class Inventory:
    """Track items."""
    region = 'north'
    def __init__(self):
        self.items = {'bolts': 10}
        self._secret = 1
    def count(self, name: str) -> int:
        """How many of `name` are in stock."""
        return self.items.get(name, 0)
inv = Inventory()
vars(inv), [n for n in dir(inv) if not n.startswith('__')], inv.__dict__
# %%
help(Inventory.count)
# %%
help(add)
# %%
with open('nb24_script.py', 'w') as f:
    f.write('RESULT = sum(range(10))\n')
%run nb24_script.py
import os
os.remove('nb24_script.py')
RESULT, __doc__
# %%
sys.getsizeof(0), sys.getsizeof(1), sys.getsizeof(''), sys.getsizeof(()), sys.getsizeof(b'abc')
# %%
from collections import Counter
def anagrams(words):
    groups = collections.defaultdict(list)
    for w in words:
        groups[''.join(sorted(w))].append(w)
    return [g for g in groups.values() if len(g) > 1]
def binary_search(a, x):
    lo, hi = 0, len(a) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if a[mid] == x:
            return mid
        lo, hi = (mid + 1, hi) if a[mid] < x else (lo, mid - 1)
    return -1
anagrams(['listen', 'silent', 'enlist', 'google', 'gooegl', 'cat', 'act', 'dog']), [binary_search(list(range(0, 100, 3)), x) for x in (0, 33, 34, 99)]
# %%
def dijkstra(graph, src):
    dist = {src: 0}
    pq = [(0, src)]
    while pq:
        d, u = heapq.heappop(pq)
        if d > dist.get(u, math.inf):
            continue
        for v, w in graph[u]:
            if d + w < dist.get(v, math.inf):
                dist[v] = d + w
                heapq.heappush(pq, (d + w, v))
    return dist
g = {'A': [('B', 1), ('C', 4)], 'B': [('C', 2), ('D', 5)], 'C': [('D', 1)], 'D': []}
dijkstra(g, 'A'), dijkstra(g, 'Z')
# %%
for row in [[1, 2, 3], [4, 5, 6]]:
    print(*row, sep='\t')
print('%-10s|%5.1f' % ('total', 12.345))
print(end='no newline')
# %%
x: int = 'not checked'
x, __annotations__
# %%
class Node:
    def __init__(self, val, next=None):
        self.val, self.next = val, next
    def __iter__(self):
        node = self
        while node:
            yield node.val
            node = node.next
head = Node(1, Node(2, Node(3)))
list(head), len(head)
# %%
import traceback
def parse_all(rows):
    return [int(r) for r in rows]
parse_all(['1', 'two'])
# %%
sys.last_type, sys.last_value, traceback.format_tb(sys.last_traceback)[-2:], __name__, __doc__
# %%
class BadMessage(Exception):
    def __str__(self):
        raise RuntimeError('message could not be built')
raise BadMessage('x')
# %%
sys.last_type, type(sys.last_value.__context__)
# %%
import asyncio
async def fetch_all():
    await asyncio.sleep(0)
    return ['a', 'b']
coro = fetch_all()
try:
    asyncio.run(coro)
except RuntimeError as e:
    print(e)
    coro.close()
await fetch_all()
