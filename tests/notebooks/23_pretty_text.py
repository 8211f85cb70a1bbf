# %%
config = {'service': {'name': 'inventory-api', 'replicas': 3, 'image': 'registry.example.com/team/inventory-api:1.4.2'}, 'env': {'LOG_LEVEL': 'debug', 'DATABASE_URL': 'postgres://user@db.internal:5432/inventory'}, 'ports': [8080, 8443]}
config
# %%
{'z': 1, 'a': 2, 'm': {'y': [1, 2, 3], 'b': ('x', 'y')}}, {3, 1, 2, 10}, frozenset({'pear', 'apple', 'fig'})
# %%
{1, 'a', 2.5}, frozenset({(2, 'b'), (1, 'a'), (1, 'z')}), set(), frozenset(), (1,), (), [], {}, ((),)
# %%
from collections import defaultdict, Counter, OrderedDict, deque, ChainMap, UserDict, UserString, namedtuple
graph = defaultdict(set)
for a, b in [('a', 'b'), ('a', 'c'), ('b', 'c')]:
    graph[a].add(b)
graph, Counter('the quick brown fox jumps over the lazy dog'.split()).most_common(3)
# %%
Counter(word for word in 'to be or not to be that is the question whether tis nobler in the mind to suffer the slings and arrows of outrageous fortune'.split())
# %%
d = deque(range(10), maxlen=5)
d.appendleft(-1)
class Registry(UserDict):
    pass
d, deque(), ChainMap({'a': 1}, {'a': 2, 'b': 3}), Registry(x=1, y=[1, 2]), UserString('hello')
# %%
Employee = namedtuple('Employee', ['name', 'dept', 'salary'])
staff = [Employee('Ana Souza', 'engineering', 120000), Employee('Bruno Lima', 'sales', 95000), Employee('Carla Dias', 'engineering', 130000)]
staff, Employee._make(['Dan', 'ops', 1])._asdict(), Employee._fields
# %%
from dataclasses import dataclass, field, asdict, astuple
@dataclass(order=True)
class Version:
    major: int
    minor: int = 0
    patch: int = 0
    tags: list = field(default_factory=list, compare=False)
@dataclass(frozen=True)
class Release:
    version: Version
    notes: str = ''
sorted([Version(1, 2), Version(1, 0, 5), Version(0, 9, tags=['beta'])])
# %%
r = Release(Version(2), 'first stable release with a long description that goes past the line width')
r
# %%
r.notes = 'x'
# %%
asdict(r), astuple(Version(1, 2, 3))
# %%
@dataclass(slots=True)
class Slotted:
    a: int
    b: str = 'b'
s = Slotted(1)
s, hasattr(s, '__dict__')
# %%
s.c = 3
# %%
from enum import Enum, IntEnum, Flag, auto
class Perm(Flag):
    R = auto()
    W = auto()
    X = auto()
class Status(IntEnum):
    OK = 200
    NOT_FOUND = 404
Perm.R | Perm.W, Perm(0), list(Perm), Status(404), Status.OK + 1, {s.name: s.value for s in Status}
# %%
Status(500)
# %%
import re
pat = re.compile(r'(?P<key>\w+)=(?P<val>\d+)', re.IGNORECASE | re.MULTILINE)
m = pat.search('alpha=1 beta=22')
pat, m, m.groupdict(), m.group(0, 'val'), m.span(), m.groups()
# %%
def area(w: float, h: float = 1.0) -> float:
    return w * h
class Shape:
    def area(self):
        return 0
area, Shape().area, Shape.area, print, len, str.upper, [].append
# %%
import math, collections
math, type, type(None), object, collections.abc.Mapping, range(5), range(0, 10, 3), slice(2), slice(1, None, -1)
# %%
b'\x00\x01hello\xff', bytearray(b'abc'), bytearray(), memoryview(b'xy').tolist(), 2 ** 200, -10 ** 30, 0xFF, 1_000_000
# %%
from decimal import Decimal, getcontext
from fractions import Fraction
getcontext().prec = 6
Decimal('0.1') + Decimal('0.2'), Fraction(3, 9), complex(1, -2), 1j ** 2, Decimal(1) / Decimal(7)
# %%
Decimal('abc')
# %%
import datetime as dt
start = dt.datetime(2024, 3, 10, 8, 30)
start, start.date(), start.time(), dt.timedelta(hours=36, minutes=5), dt.timezone.utc, dt.timezone(dt.timedelta(hours=-3)), dt.datetime(2024, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30)))
# %%
from pathlib import PurePosixPath
p = PurePosixPath('/data/reports/2024/summary.final.csv')
p, p.suffixes, p.stem, p.parent, p.parts
# %%
import itertools
itertools.count(5), itertools.chain([1], [2]), itertools.islice('abc', 2), list(itertools.combinations('ABCD', 2)), list(itertools.permutations(range(3), 2))
# %%
list(itertools.product('ab', repeat=2)), list(itertools.accumulate([1, 2, 3, 4])), [(k, list(g)) for k, g in itertools.groupby('aaabbc')]
# %%
inv = {'apples': 3, 'pears': 0}
inv.keys(), inv.values(), inv.items(), reversed([1, 2]), iter([1])
# %%
class Matrix:
    def __init__(self, rows):
        self.rows = rows
    def _repr_pretty_(self, p, cycle):
        with p.group(2, 'Matrix([', '])'):
            for i, row in enumerate(self.rows):
                if i:
                    p.text(',')
                    p.breakable()
                p.pretty(row)
Matrix([[1, 2, 3], [4, 5, 6]]), Matrix([[i * j for j in range(12)] for i in range(5)])
# %%
class Broken:
    def __repr__(self):
        raise ValueError('repr exploded')
[1, Broken()]
# %%
class NotStr:
    def __repr__(self):
        return 42
NotStr()
# %%
tree = {'name': 'root', 'children': []}
tree['children'].append(tree)
nums = [1, 2]
nums.append(nums)
tree, nums
# %%
list(range(1200))
# %%
{i: str(i) for i in range(1005)}
# %%
class Tags(list):
    pass
class Config(dict):
    def __repr__(self):
        return f'Config({dict.__repr__(self)})'
class Pair(tuple):
    pass
class Name(str):
    pass
class Cents(int):
    def __repr__(self):
        return f'{int(self) / 100:.2f}'
Tags([1, 2]), Config(a=1), Pair((1, 2)), Name('ana'), Cents(1999), [Cents(i * 1001) for i in range(20)]
# %%
name, qty, price = 'widget', 7, 3.14159
f'{name:>10}|{qty:03d}|{price:.2f}|{price:10.3e}|{qty:b}|{255:#x}|{0.256:.1%}|{1234567.891:,.2f}'
# %%
print(f'{name!r:^16}|{"left":<8}|{"right":>8}|{-42:+d}|{qty=}|{price = :.1f}')
# %%
f'{price:.2q}'
# %%
import textwrap
para = 'The quick brown fox jumps over the lazy dog. ' * 4
print(textwrap.fill(para, width=40, initial_indent='> ', subsequent_indent='  '))
textwrap.wrap(para, 30)[:3], textwrap.shorten(para, 50), textwrap.dedent('    a\n      b\n')
# %%
import unicodedata
s1, s2 = 'café', 'cafe\u0301'
s1 == s2, unicodedata.normalize('NFC', s2) == s1, len(s2), unicodedata.name('é'), [unicodedata.category(c) for c in 'a1 ']
# %%
words = ['naïve', 'résumé', '日本語', '👍🏽', 'e\u0301', 'Straße']
print(words)
for w in words:
    print(f'|{w:<8}|{w:>8}|')
words, [len(w) for w in words], 'Straße'.upper(), 'Straße'.casefold(), '🙂'.encode('utf-8')
# %%
text = 'Contact: ana@example.com, bruno.lima@corp.io; phone +55 11 98765-4321 or (21) 3333-4444.'
re.findall(r'[\w.]+@[\w.]+', text), re.findall(r'\((\d+)\) (\d+)-(\d+)', text), re.sub(r'(\w+)@(\w+)', r'\2 at \1', text), re.split(r'[,;]\s*', text), re.subn(r'\d', '#', 'a1b22')
# %%
re.compile('[unclosed')
# %%
import json
payload = {'user': {'id': 7, 'name': 'Zoë', 'roles': ['admin', 'dev']}, 'active': True, 'score': None, 'ratio': 0.5}
print(json.dumps(payload, indent=2))
json.dumps(payload), json.dumps(payload, ensure_ascii=False, sort_keys=True)
# %%
json.dumps({'when': dt.date(2024, 1, 1)})
# %%
import csv, io
buf = io.StringIO()
writer = csv.DictWriter(buf, fieldnames=['name', 'city'])
writer.writeheader()
writer.writerows([{'name': 'Ana', 'city': 'São Paulo'}, {'name': 'O\'Neil, Pat', 'city': 'NYC "Big Apple"'}])
print(buf.getvalue())
buf.getvalue(), list(csv.reader(io.StringIO(buf.getvalue()))), list(csv.DictReader(io.StringIO('a,b\n1,2\n3,4\n')))
# %%
from string import Template
t = Template('Hello $name, you owe $$${amount}')
t.substitute(name='Ana', amount=10), t.safe_substitute(name='Bo')
# %%
t.substitute(name='Ana')
# %%
'  Mixed Case  '.strip().title(), 'a,b,,c'.split(','), 'x'.join('abc'), 'hello world'.center(21, '*'), 'abc'.zfill(6), 'Tab\there'.expandtabs(4), '%(a)s-%(b)05.1f' % {'a': 'x', 'b': 2.25}
# %%
import difflib
print('\n'.join(difflib.unified_diff(['a\n', 'b\n', 'c\n'], ['a\n', 'B\n', 'c\n'], 'old', 'new', lineterm='')))
difflib.get_close_matches('appel', ['ape', 'apple', 'peach', 'puppy']), round(difflib.SequenceMatcher(None, 'abcd', 'abed').ratio(), 3)
# %%
>>> sorted(['banana', 'Apple', 'cherry', 'apple'], key=str.lower)
>>> ''.join(reversed('stressed'))
# %%
    indented = 'the whole cell is indented'
    indented.split()
