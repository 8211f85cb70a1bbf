# %%
import inspect
def normalize(values, *, lo=0.0, hi=1.0):
    """Scale values linearly into [lo, hi]."""
    mn, mx = min(values), max(values)
    return [lo + (v - mn) * (hi - lo) / (mx - mn) for v in values]
print(inspect.getsource(normalize))
inspect.signature(normalize), inspect.getdoc(normalize)
# %%
lines, start = inspect.getsourcelines(normalize)
len(lines), start, inspect.getfile(normalize).endswith('.py'), inspect.getmodule(normalize)
# %%
class Scaler:
    def fit(self, xs):
        self.lo = min(xs)
        return self
inspect.getsource(Scaler)
# %%
import __main__, sys
__main__.__dict__ is globals(), sys.modules['__main__'] is __main__, hasattr(__main__, '__file__'), __main__.__name__
# %%
def add(a, b):
    """Add two numbers.

    >>> add(2, 3)
    5
    >>> add('a', 'b')
    'ab'
    """
    return a + b
def mul(a, b):
    """
    >>> mul(2, 3)
    7
    """
    return a * b
import doctest
doctest.testmod()
# %%
doctest.run_docstring_examples(add, globals(), verbose=True, name='add')
# %%
import unittest
class TestAdd(unittest.TestCase):
    def test_ints(self):
        self.assertEqual(add(1, 2), 3)
    def test_fail(self):
        self.assertEqual(add(1, 1), 3)
    def test_error(self):
        add(1, 'x')
    @unittest.skip('not ready')
    def test_skip(self):
        pass
result = unittest.main(argv=['ignored'], exit=False, verbosity=2)
result.result.testsRun, len(result.result.failures), len(result.result.errors), len(result.result.skipped)
# %%
unittest.main(argv=['ignored'])
# %%
import numpy as np
np.testing.assert_allclose([1.0, 2.0, 3.0], [1.0, 2.1, 3.0])
# %%
np.testing.assert_array_equal(np.arange(4), np.array([0, 1, 2, 4]))
# %%
import pandas as pd
pd.testing.assert_frame_equal(pd.DataFrame({'a': [1, 2]}), pd.DataFrame({'a': [1, 3]}))
# %%
pd.testing.assert_series_equal(pd.Series([1, 2], name='x'), pd.Series([1, 2], name='y'))
# %%
s = sys.stdout
type(s).__name__, s.isatty(), s.encoding, s.writable(), s.readable(), s.closed, s.name if hasattr(s, 'name') else None
# %%
type(sys.stdin).__name__, sys.stdin.isatty() if hasattr(sys.stdin, 'isatty') else None
# %%
sys.stdin.readline()
# %%
import shutil, locale
shutil.get_terminal_size(), sys.getdefaultencoding(), locale.getpreferredencoding(), sys.stdout.errors
# %%
import os
os.environ.get('TERM'), os.environ.get('CLICOLOR'), os.environ.get('PAGER'), os.environ.get('GIT_PAGER')
# %%
sys.platform, sys.byteorder, sys.executable.split('/')[-1].startswith('python'), sys.getrecursionlimit()
# %%
n = sys.stdout.write('partial line')
print()
n
# %%
print('a', 'b', sep='', end='')
print('c', flush=True)
sys.stdout.flush()
