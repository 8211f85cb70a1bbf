# %%
import numpy as np
np.get_printoptions()
# %%
np.arange(2000)
# %%
np.arange(2000).reshape(40, 50)
# %%
np.set_printoptions(threshold=20, edgeitems=2)
np.arange(100).reshape(10, 10)
# %%
print(np.linspace(0, 1, 30))
# %%
np.set_printoptions(precision=3, suppress=True)
np.array([1e-8, 1.23456789, 12345.678])
# %%
np.set_printoptions(formatter={'float': lambda x: f'{x:.1%}'})
np.array([0.1234, 0.5, 0.99])
# %%
np.set_printoptions(linewidth=40)
np.arange(30.0)
# %%
np.set_printoptions(edgeitems=3, threshold=1000, floatmode='maxprec', precision=8, suppress=False, linewidth=75, formatter=None, sign='-')
np.array([1.0, 2.5, 1 / 3])
# %%
with np.printoptions(precision=2, sign='+'):
    print(np.array([1.005, -2.5, 3.14159]))
np.array([1.005, -2.5, 3.14159])
# %%
people = np.array([('Ana', 31, 1.62), ('Bo', 45, 1.80)], dtype=[('name', 'U10'), ('age', 'i4'), ('height', 'f8')])
people
# %%
people['age'].mean(), people[0], people.dtype
# %%
rec = people.view(np.recarray)
rec.name, rec[1]
# %%
np.sort(people, order='height')[::-1]
# %%
np.array(['2024-01-01', '2024-02-29', 'NaT'], dtype='datetime64[D]') + np.timedelta64(1, 'D')
# %%
np.array([1 + 2j, -0.5j, 3]), np.complex128(1j) ** 2
# %%
np.float64(0.1) + np.float64(0.2), np.float32(1 / 3), np.int8(127) + np.int8(1)
# %%
np.array([1, 2, 3], dtype=object), np.array([[1, 'a'], [None, 2.5]], dtype=object)
# %%
np.zeros((2, 0)), np.empty((0,), dtype=int), np.array(5), np.array([[[1]]])
# %%
np.eye(3, dtype=bool)
# %%
np.ma.masked_where(np.arange(6) % 2 == 0, np.arange(6.0))
# %%
np.finfo(np.float32), np.iinfo(np.int16)
# %%
np.dtype([('x', '<f4'), ('y', '<f4', (2,))]), np.dtype('M8[ns]')
# %%
a = np.arange(12).reshape(3, 4)
a.flags
# %%
np.info(np.mean)
# %%
np.random.seed(0)
np.random.randn(3, 3).round(2)
# %%
np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])
# %%
np.array(['a' * 30, 'b'] * 5)
# %%
big = np.arange(10 ** 6)
big.nbytes, big.sum(), big[::250000]
# %%
np.unique(np.array([3, 1, 3, 2, 1]), return_counts=True)
# %%
print(np.array2string(np.array([[1.5, 2], [3, 4]]), separator=', ', prefix='M = '))
np.array_repr(np.array([1, 2])), np.array_str(np.eye(2))
