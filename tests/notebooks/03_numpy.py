# %%
import numpy as np
np.arange(10)
# %%
np.zeros((2, 3))
# %%
np.ones((2, 2, 2), dtype=np.int32)
# %%
np.array([1.5, 2.25, 3.125])
# %%
np.array([True, False])
# %%
np.array(['a', 'bb', 'ccc'])
# %%
np.array([1+2j, 3-4j])
# %%
np.arange(2000)
# %%
np.linspace(0, 1, 7)
# %%
np.array([1e-10, 1, 1e10])
# %%
np.array([np.nan, np.inf, -np.inf, 0.0])
# %%
np.eye(3)
# %%
np.random.seed(0)
a = np.random.rand(3, 4)
a.round(3)
# %%
a.shape, a.dtype, a.ndim
# %%
np.float64(3.14159), np.int64(7), np.float32(0.1)
# %%
np.set_printoptions(precision=2, suppress=True)
np.array([3.14159265, 1e-5, 12345.6789])
# %%
np.set_printoptions(edgeitems=3, infolevel=None) if False else None
np.set_printoptions(precision=8, suppress=False)
np.arange(12).reshape(3, 4).T
# %%
np.array([], dtype=float)
# %%
np.array(5)
# %%
np.datetime64('2024-01-01') + np.arange(3)
# %%
np.array([[1, 2], [3, 4]]) @ np.array([[5], [6]])
# %%
print(np.arange(6).reshape(2, 3))
# %%
np.mean([1, 2, 3, 4]), np.std([1, 2, 3, 4])
# %%
np.array([1, 2, 3], dtype=np.uint8) - 5
# %%
np.arange(3) + np.arange(4)
# %%
np.ma.masked_array([1, 2, 3], mask=[0, 1, 0])
