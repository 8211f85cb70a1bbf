# %%
from dataclasses import dataclass, field, asdict, astuple
from enum import Enum, IntEnum, Flag, auto
from typing import NamedTuple, Optional, Union, List, Dict, Callable, TypeVar, Generic
import collections, datetime, decimal, fractions, types, functools, re, uuid, pathlib
@dataclass(order=True)
class Point:
    x: float
    y: float = 0.0
    tags: list = field(default_factory=list, repr=False)
Point(1.5), [Point(2, 1), Point(1, 2)]
# %%
@dataclass(frozen=True, slots=True)
class Frozen:
    name: str
fr = Frozen('a')
try:
    fr.name = 'b'
except Exception as e:
    print(type(e).__name__, e)
fr, asdict(Point(1, 2, ['t'])), astuple(Point(3))
# %%
class Color(Enum):
    RED = 1
    GREEN = auto()
class Perm(Flag):
    R = 4
    W = 2
    X = 1
class Level(IntEnum):
    LOW = 1
    HIGH = 2
Color.RED, Color['GREEN'], list(Color), Perm.R | Perm.W, Level.HIGH > Level.LOW, Level.LOW + 1
# %%
print(Color.RED, Perm.R | Perm.X, Level.HIGH, f'{Level.HIGH}')
# %%
class Row(NamedTuple):
    id: int
    label: Optional[str] = None
Row(1), Row(2, 'x')._asdict(), Row._fields
# %%
Pair = collections.namedtuple('Pair', 'left right')
Pair(1, [2] * 40)
# %%
T = TypeVar('T')
class Box(Generic[T]):
    pass
List[int], Dict[str, List[float]], Optional[int], Union[int, str], Callable[[int], str], T, Box[int], list[int] | None
# %%
types.SimpleNamespace(a=1, b='two', c=[3])
# %%
functools.partial(int, base=2), functools.partial(max, 1, 2)
# %%
re.compile(r'(\d+)-(\w+)', re.I), re.match(r'(\d+)', '123abc'), re.findall(r'\d', 'a1b2')
# %%
decimal.Decimal('1.10') + decimal.Decimal('2.205'), fractions.Fraction(3, 9)
# %%
datetime.date(2024, 2, 29), datetime.datetime(2024, 1, 1, 12, 30, tzinfo=datetime.timezone.utc), datetime.timedelta(days=1, seconds=5), datetime.time(23, 59)
# %%
print(datetime.datetime(2024, 1, 1, 12, 30), datetime.timedelta(hours=-1))
# %%
uuid.UUID('12345678-1234-5678-1234-567812345678'), pathlib.PurePosixPath('/data') / 'raw' / 'x.csv'
# %%
collections.ChainMap({'a': 1}, {'b': 2}), collections.Counter('mississippi').most_common(2)
# %%
d = collections.defaultdict(list)
d['x'].append(1)
d, dict(d)
# %%
range(10), range(0, 100, 7), slice(1, None, 2), ..., NotImplemented
# %%
bytearray(b'abc'), bytes(range(20)), b'\x00\xff' * 30
# %%
{3, 1, 2}, frozenset({'b', 'a'}), set(), {1: 'a', 'b': 2, (1, 2): None}
# %%
nested = {'config': {'model': {'layers': [64, 128, 256, 512], 'dropout': 0.25, 'activation': 'relu'}, 'training': {'epochs': 100, 'lr': 0.001, 'optimizer': {'name': 'adam', 'betas': (0.9, 0.999)}}}}
nested
# %%
loop = [1, 2]
loop.append(loop)
cyc = {'self': None}
cyc['self'] = cyc
loop, cyc
# %%
list(range(1200))
# %%
[list(range(5)) for _ in range(30)]
# %%
'x' * 5000
# %%
'line\n' * 3, 'tab\there', 'quote\'s "both"'
# %%
print('émoji ✓', '\u00e9' == 'e\u0301', len('e\u0301'))
'Ünïcödé', 'שלום', '🙂' * 3
# %%
2 ** 200, -2 ** 63, 1e300 * 10, 0.1 + 0.2, 1 / 3, 1e-7, 123456789.0 * 1e10, float('nan')
# %%
import sys
sys.set_int_max_str_digits(0)
len(str(10 ** 5000)), sys.get_int_max_str_digits()
# %%
sys.set_int_max_str_digits(4300)
def fn(a, b=2, *args, c, **kw):
    'doc'
fn, print, len, str.upper, 'abc'.upper, object.__init__, type, int
# %%
class Plain:
    pass
class WithRepr:
    def __repr__(self):
        return 'WithRepr<\n  multi\n  line>'
Plain, WithRepr(), [WithRepr(), WithRepr()]
# %%
(i for i in range(3)).__class__, iter([1]).__class__, type(None), type(...)
# %%
import math
math.pi, math.e, math.inf, -math.inf, math.tau, True + True, complex(1, -1), divmod(17, 5)
# %%
(1,), (), [[]], [{}], {'a': ()}, None
# %%
None
# %%
print(None)
x = None
x
