# %%
from dataclasses import dataclass
@dataclass
class Point:
    x: float
    y: float
Point(1, 2.5)
# %%
def summarize(values):
    """Return min, max, mean."""
    return min(values), max(values), sum(values) / len(values)

summarize([3, 1, 2])
# %%
summarize([])
# %%
class Account:
    def __init__(self, balance):
        self.balance = balance
    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError(f"insufficient funds: {self.balance} < {amount}")
        self.balance -= amount
        return self.balance
acc = Account(100)
acc.withdraw(30)
# %%
acc.withdraw(500)
# %%
acc
# %%
Account
# %%
summarize
# %%
lambda x: x
# %%
import collections
collections.Counter('abracadabra')
# %%
collections.OrderedDict(a=1, b=2)
# %%
collections.defaultdict(list, {'k': [1]})
# %%
from enum import Enum
class Color(Enum):
    RED = 1
Color.RED
# %%
{'nested': {'list': [1, 2, {'deep': True}], 'tuple': (1,)}, 'n': None}
# %%
[{'id': i, 'name': f'item {i}', 'price': i * 1.1} for i in range(8)]
# %%
gen = (i for i in range(3))
type(gen).__name__
# %%
def recurse(n):
    return recurse(n + 1)
recurse(0)
# %%
import json
json.loads('{"a": 1')
# %%
open('/nonexistent/file.txt')
# %%
async def fetch():
    return 'fetched'
await fetch()
# %%
set(), {}, ()
# %%
'x' * 3000
# %%
1.0 / 3, 2 / 3 * 1e20, 1e-7
