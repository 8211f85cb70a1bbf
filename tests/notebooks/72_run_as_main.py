# %%
# %run as `python script.py` runs a script: its module is __main__ while it
# runs (unittest.main(), pickle, multiprocessing find what it defines), and
# its directory is on sys.path.
import os
# %%
%%writefile nb72_tests.py
import unittest
class TestCap(unittest.TestCase):
    def test_one(self):
        self.assertEqual('a'.title(), 'A')
    def test_two(self):
        pass
if __name__ == '__main__':
    unittest.main(exit=False, verbosity=2)
# %%
%run nb72_tests.py
# %%
%%writefile nb72_pickle.py
import pickle, sys, __main__
class Point:
    def __init__(self, x):
        self.x = x
data = pickle.dumps(Point(3))
print('pickled', pickle.loads(data).x, __main__.__dict__ is globals(), __name__)
# %%
%run nb72_pickle.py
# %%
%run -n nb72_pickle.py
# %%
import sys
'nb72_pickle' in sys.modules, sys.modules['__main__'].__name__, type(Point(1)).__module__
# %%
import os
os.makedirs('nb72_sub', exist_ok=True)
with open('nb72_sub/nb72_helper.py', 'w') as f:
    f.write('VALUE = 42\n')
with open('nb72_sub/nb72_script.py', 'w') as f:
    f.write('import nb72_helper, sys, os\nprint("helper", nb72_helper.VALUE, sys.path[0] == os.path.dirname(os.path.abspath(__file__)))\n')
# %%
%run nb72_sub/nb72_script.py
# %%
any(p.endswith('nb72_sub') for p in sys.path)
# %%
%%writefile nb72_counter.py
count = globals().get('count', 0) + 1
def get():
    return count
# %%
%run nb72_counter.py
g1 = get
# %%
%run nb72_counter.py
g1(), get(), sorted(k for k in ('__nonzero__', '__doc__', '__package__', '__spec__', '__loader__') if k in globals())
# %%
__doc__, __name__
# %%
%run -i nb72_pickle.py
# %%
import shutil
for p in ('nb72_tests.py', 'nb72_pickle.py', 'nb72_counter.py'):
    os.remove(p)
shutil.rmtree('nb72_sub')
