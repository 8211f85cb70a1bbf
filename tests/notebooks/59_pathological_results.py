# %%
deep = []
for _ in range(3000):
    deep = [deep]
deep
# %%
class NonStrRepr:
    def __repr__(self):
        return 42
NonStrRepr()
# %%
class MarkdownNone:
    def _repr_markdown_(self):
        return None
    def __repr__(self):
        return 'MarkdownNone()'
MarkdownNone()
# %%
class BadLen(list):
    def __len__(self):
        raise RuntimeError('no len')
BadLen([1, 2])
# %%
class Tuple2(tuple):
    pass
Tuple2((1, 2)), type('Sub', (dict,), {})(a=1), type('SubL', (list,), {})([1])
# %%
class ReprTuple:
    def _repr_html_(self):
        return ('<b>x</b>', {'isolated': True})
    def __repr__(self):
        return 'ReprTuple()'
ReprTuple()
# %%
class MimeBad:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {'text/plain': 'from bundle', 'application/x-custom': {'a': 1}}
MimeBad()
# %%
class MimeRaises:
    def _repr_mimebundle_(self, include=None, exclude=None):
        raise ValueError('bundle failed')
    def __repr__(self):
        return 'MimeRaises()'
MimeRaises()
# %%
class DisplayRaises:
    def _ipython_display_(self):
        raise ValueError('display failed')
DisplayRaises()
# %%
class DisplayPrints:
    def _ipython_display_(self):
        print('custom display')
DisplayPrints()
# %%
x = DisplayPrints()
display(x, 'after')
# %%
[float('nan'), float('inf')], {'a': float('nan')}
# %%
{1: 'a', 'b': 2}, {(1, 2): 3, None: 4, 1.5: 5}
# %%
{frozenset({1}): 1, frozenset({2}): 2}
# %%
set(range(30)), {'b', 'a', 'c'}, {1, 'a'}
# %%
import numpy as np
{'arr': np.arange(3), 'f': np.float32(1.5)}, [np.int64(5)]
# %%
b'x' * 100, bytearray(200)
# %%
'\x00\x1b[31m\t\r', '\ud800'
