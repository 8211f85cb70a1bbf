# %%
import inspect, abc, typing, functools, sys
class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self): ...
Shape()
# %%
class Square(Shape):
    def __init__(self, s):
        self.s = s
    def area(self):
        return self.s ** 2
    def __eq__(self, other):
        return isinstance(other, Square) and other.s == self.s
    __hash__ = None
sq = Square(3)
sq.area(), sq == Square(3), Square.__mro__
# %%
{sq}
# %%
class Meta(type):
    def __repr__(cls):
        return f'<class {cls.__name__} via Meta>'
class WithMeta(metaclass=Meta):
    pass
WithMeta, [WithMeta]
# %%
class Slotted:
    __slots__ = ('a',)
s = Slotted()
s.b = 1
# %%
class Prop:
    @property
    def value(self):
        raise AttributeError('inner missing')
    def __getattr__(self, name):
        raise AttributeError(f'no {name}')
Prop().value
# %%
inspect.signature(functools.reduce), inspect.signature(lambda a, *b, c=1, **d: 0)
# %%
def documented(a: int, b: 'str' = 'x') -> typing.List[int]:
    """Return stuff.

    More detail.
    """
    return [a]
documented.__annotations__, inspect.getdoc(documented)
# %%
print(inspect.getsource(documented))
# %%
inspect.getsourcelines(Square)[1], inspect.getfile(Square).startswith('/tmp/ipykernel_')
# %%
documented?
# %%
Square??
# %%
%pdoc documented
# %%
%pdef documented
# %%
class Ordered(typing.NamedTuple):
    a: int
    b: str = 'x'
    def double(self):
        return self.a * 2
Ordered(2).double(), Ordered.__annotations__
# %%
class Node:
    def __init__(self, v, children=()):
        self.v, self.children = v, list(children)
    def __repr__(self):
        return f'Node({self.v!r}, {self.children!r})'
Node(1, [Node(2), Node(3, [Node(4)])])
# %%
class Both:
    def __str__(self):
        return 'str form'
    def __repr__(self):
        return 'repr form'
b = Both()
print(b)
b, str(b), f'{b!r}', [b]
# %%
class Counter:
    count = 0
    def __call__(self):
        Counter.count += 1
        return Counter.count
c = Counter()
c(), c(), callable(c)
# %%
class Temp:
    def __enter__(self):
        print('enter')
        return self
    def __exit__(self, *exc):
        print('exit', exc[0].__name__ if exc[0] else None)
        return False
with Temp():
    raise ValueError('inside with')
# %%
class Swallow(Temp):
    def __exit__(self, *exc):
        print('swallowed', exc[0].__name__)
        return True
with Swallow():
    1 / 0
print('after')
# %%
def deco(fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        print('calling', fn.__name__)
        return fn(*a, **k)
    return wrapper
@deco
def greet(name):
    return f'hi {name}'
greet('x'), greet.__wrapped__.__name__
# %%
@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(80), fib.cache_info()
# %%
class Descr:
    def __set_name__(self, owner, name):
        self.name = name
    def __get__(self, obj, objtype=None):
        return 'descr:' + self.name
class Host:
    attr = Descr()
Host().attr, Host.attr
# %%
sys.getrecursionlimit(), sys.version_info[:2], sys.platform
# %%
class E(Exception):
    def __init__(self, code):
        super().__init__(f'code {code}')
        self.code = code
try:
    raise E(7)
except E as e:
    print(e.code, repr(e), e.args)
raise E(8)
