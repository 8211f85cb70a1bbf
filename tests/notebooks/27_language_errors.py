# %%
def depth(n):
    return depth(n + 1)
depth(0)
# %%
def parse_value(tokens):
    if tokens[0] == '[':
        return parse_list(tokens)
    return int(tokens.pop(0))
def parse_list(tokens):
    tokens.pop(0)
    items = []
    while tokens[0] != ']':
        items.append(parse_value(tokens))
    tokens.pop(0)
    return items
parse_value(list('[[[[[[1]]]]]]')), parse_value(list('[[[[[[x]]]]]]'))
# %%
def read_rows():
    for raw in ['1', '2', 'three', '4']:
        yield int(raw)
def total(rows):
    return sum(r * 2 for r in rows)
total(read_rows())
# %%
def first_positive(values):
    it = iter(values)
    while True:
        v = next(it)
        if v > 0:
            yield v
            return
list(first_positive([-1, -2]))
# %%
class Settings:
    defaults = {'retries': 3}
    timeout = defaults['timeout']
# %%
records = [{'name': 'a', 'score': 3}, {'name': 'b'}]
sorted(records, key=lambda r: r['score'])
# %%
list(map(int, ['10', '20', '3O']))
# %%
exec('x = 1\ny = x +\n')
# %%
eval('undefined_in_eval * 2')
# %%
exec('def helper():\n    return 1 / 0\nhelper()')
# %%
with open('nb27_helpers.py', 'w') as f:
    f.write('def normalise(values):\n    top = max(values)\n    return [v / top for v in values]\n')
import nb27_helpers
nb27_helpers.normalise([1, 2, 3])
# %%
nb27_helpers.normalise([0, 0])
# %%
import os
os.remove('nb27_helpers.py')
nb27_helpers.normalise([])
# %%
import warnings
with warnings.catch_warnings():
    warnings.simplefilter('error')
    warnings.warn('precision lost in conversion', UserWarning)
# %%
class Transaction:
    def __enter__(self):
        print('begin')
        return self
    def __exit__(self, exc_type, exc, tb):
        print('rollback' if exc_type else 'commit')
        if exc_type is KeyError:
            raise RuntimeError('rollback failed')
        return False
with Transaction():
    {}['account']
# %%
with Transaction():
    print('transfer ok')
# %%
def cleanup():
    try:
        return 1 / 0
    finally:
        print('finally runs')
        raise OSError('disk detached during cleanup')
cleanup()
# %%
def validate(row):
    errors = []
    if row.get('age', 0) < 0:
        errors.append(ValueError(f"age must be >= 0, got {row['age']}"))
    if 'email' not in row:
        e = KeyError('email')
        e.add_note('row came from the signup form')
        errors.append(e)
    if errors:
        raise ExceptionGroup(f'row {row["id"]} invalid', errors)
batch = [{'id': 1, 'age': -3}, {'id': 2, 'age': 40, 'email': 'x@y'}]
problems = []
for row in batch:
    try:
        validate(row)
    except ExceptionGroup as eg:
        problems.append(eg)
raise ExceptionGroup('batch failed', problems)
# %%
try:
    raise ExceptionGroup('mixed', [ValueError('v'), TypeError('t'), OSError('o')])
except* ValueError:
    print('handled the ValueError')
# %%
err = RuntimeError('upload failed')
err.add_note('bucket: reports-2024')
err.add_note('retry with --force to overwrite')
try:
    raise ConnectionError('timed out after 30s')
except ConnectionError as e:
    raise err from e
# %%
raise
# %%
raise KeyError('line one\nline two')
# %%
raise OSError(2, 'No such file or directory', 'config.yaml')
# %%
raise ValueError({'field': 'price', 'problem': 'negative'})
# %%
assert 1 + 1 == 3, {'expected': 3, 'got': 2}
# %%
def shutdown(code):
    try:
        raise SystemExit(code)
    finally:
        print('flushing buffers')
shutdown(3)
# %%
raise SystemExit
# %%
print('the kernel is still here')
try:
    import sys
    sys.exit('stopping early')
except SystemExit as e:
    print('caught', repr(e), e.code)
# %%
def make_multiplier(k):
    def multiply(x):
        def check(v):
            if not isinstance(v, (int, float)):
                raise TypeError(f'cannot multiply {type(v).__name__}')
            return v
        return check(x) * k
    return multiply
triple = make_multiplier(3)
[triple(v) for v in (1, 2.5, '3')]
# %%
%tb
# %%
%tb plain
# %%
class TreeNode:
    def __init__(self, children=()):
        self.children = list(children)
    def size(self):
        return 1 + sum(c.size() for c in self.children)
loop = TreeNode()
loop.children.append(loop)
loop.size()
# %%
def countdown(n):
    if n == 0:
        raise RuntimeError('reached zero')
    return countdown(n - 1)
countdown(6)
# %%
%xmode Plain
import json
def load_config(text):
    return json.loads(text)
load_config('{"debug": true,}')
# %%
try:
    {}['api_key']
except KeyError:
    raise LookupError('config incomplete')
# %%
%xmode Minimal
def parse(v):
    try:
        return int(v)
    except ValueError as e:
        raise TypeError(f'bad value {v!r}') from e
parse('x')
# %%
%xmode
1 / 0
# %%
%xmode context
[][0]
# %%
from functools import partial, reduce
import operator
to_int = partial(int, base=2)
by_price = operator.itemgetter('price')
get_name = operator.attrgetter('name')
upper = operator.methodcaller('upper')
to_int, to_int('1011'), reduce(operator.mul, range(1, 8)), by_price({'price': 9.5}), upper('ok')
# %%
from typing import TypeVar, Generic, Callable, Literal, Union, Optional, Any, Annotated, get_type_hints
T = TypeVar('T')
class Box(Generic[T]):
    def __init__(self, item: T):
        self.item = item
Handler = Callable[[str, int], Optional[bool]]
Mode = Literal['r', 'w']
Box[int], Handler, Mode, Union[int, str, None], int | None, Annotated[float, 'meters'], T, Any
# %%
def send(to: str, retries: int = 3) -> bool:
    return True
get_type_hints(send), send.__defaults__, send.__code__.co_varnames
# %%
summary = {'rows': 1200, 'cols': 14}
print('summary computed')
summary['rows'] * 2;
# %%
summary;  # keep the notebook quiet
# %%
value = 41
value += 1
value if value > 40 else None
# %%
for name in ('a', 'b'):
    name.upper()
# %%
x = 10; y = 20; x * y
# %%
(lambda a, b: a ** b)(2, 10)
# %%
None
# %%
display(summary, 'text', 3.5, [1, 2])
summary['rows']
