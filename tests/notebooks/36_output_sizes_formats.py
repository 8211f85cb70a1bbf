# %%
import numpy as np
import pandas as pd
rng = np.random.default_rng(7)
big = pd.DataFrame(rng.normal(size=(1000, 30)).round(3), columns=[f'feature_{i:02d}' for i in range(30)])
big
# %%
big.iloc[:, :4].describe()
# %%
pd.set_option('display.expand_frame_repr', False)
big.head(3)
# %%
pd.set_option('display.width', 60)
pd.reset_option('display.expand_frame_repr')
print(big.iloc[:2, :12])
# %%
pd.reset_option('display.width')
reviews = pd.Series(['An absolutely wonderful product that exceeded every single expectation I had ' * 2,
                     'meh', 'Terrible.\nWould not buy again.\tTabs too'], name='review')
reviews
# %%
pd.set_option('display.max_colwidth', None)
reviews.to_frame()
# %%
pd.set_option('display.max_colwidth', 20)
reviews.to_frame(), reviews.str.len()
# %%
pd.reset_option('display.max_colwidth')
list(range(5000))
# %%
{'batch': {'ids': list(range(1500)), 'meta': {'source': 'sensor', 'tags': [f't{i}' for i in range(3)]}}}
# %%
[[i] * 3 for i in range(1100)][-2:], tuple(range(1001)), set(range(1001)) == set(range(1001))
# %%
arr = np.arange(1_000_000) / 7
arr, arr.reshape(1000, 1000), arr.nbytes
# %%
print(arr[:3], arr.reshape(1000, 1000)[:2, :5])
# %%
text = 'lorem ipsum dolor sit amet ' * 400
text
# %%
len(text), text[:50] + '…', repr(text)[-40:]
# %%
blob = bytes(range(256)) * 40
blob
# %%
for i in range(10_000):
    print(f'line {i:05d}')
# %%
import sys
chunk = ('0123456789' * 99 + '\n')
sys.stdout.write(chunk * 5000)
print('done', len(chunk) * 5000)
# %%
{1, 'a', (1, 2), None, 2.5, frozenset({3})}, {3, 1.5, -2, 10**20}, {'b', 'a', 'C'}
# %%
{(1, 2): 'tuple', 3: 'int', None: 'none', 1.5: 'float', frozenset(): 'fs', True: 'bool', 'z': 'str'}
# %%
class Wide:
    def __repr__(self):
        return 'Wide(' + ', '.join(f'field{i}={i * 1.5}' for i in range(60)) + ')'
class Multi:
    def __repr__(self):
        return 'Multi(\n  a=1,\n  b=[1, 2]\n)'
Wide(), [Multi(), Multi()], {'k': Multi()}
# %%
class Money:
    def __init__(self, cents):
        self.cents = cents
    def __str__(self):
        return f'R$ {self.cents / 100:,.2f}'
    def __repr__(self):
        return f'Money({self.cents})'
m = Money(123456)
print(m, [m])
display(m)
m, str(m), f'{m}', f'{m!r}', '%s / %r' % (m, m)
# %%
class OnlyStr:
    def __str__(self):
        return 'only str'
print(OnlyStr())
OnlyStr()
# %%
0.1 + 0.2, 1e16, 1e15, -0.0, 1e-5, 0.0001, 123456789.123456789, 2.5e-300 * 1e-100, float('nan'), [float('inf'), -float('inf'), float('nan')]
# %%
np.array([0.1 + 0.2, np.nan, np.inf, -np.inf, -0.0, 1e16]), np.array([1e-10, 1.0]), np.array([1.5, 2.0])
# %%
pd.DataFrame({'x': [0.1 + 0.2, np.nan, np.inf, -0.0], 'y': [1e16, 1e-10, -np.inf, 1.0]})
# %%
round(2.675, 2), 1 / 3, 2 / 3 * 3, float('1e500'), int(1e16), 10 ** 16 / 3, format(1e16, ',')
# %%
from decimal import Decimal
from fractions import Fraction
ledger = {'total': Decimal('1234.50'), 'share': Fraction(1, 3), 'z': 3 + 4j, 'items': [Decimal('0.10'), Fraction(7, 2), -1j, complex('nan+infj')]}
ledger
# %%
sorted([Fraction(1, 3), Decimal('0.3'), 0.33]), Decimal('1e-10'), Decimal('-0'), Decimal('NaN'), Decimal('Infinity')
# %%
np.float32(1.5), np.float32(0.1), np.int64(7), np.bool_(True), np.uint8(255), np.float64(0.1 + 0.2), np.complex64(1 + 2j), np.int32(-3), np.float16(2.5)
# %%
[np.float32(1.5), np.int64(7), np.bool_(False)], {'n': np.int64(3), 'f': np.float64(2.5)}, np.float32(1.5) * 2, type(np.float32(1.5) + 1.0).__name__
# %%
print(np.float32(1.5), np.int64(7), np.bool_(True), [np.float64(0.1)], np.datetime64('2024-03-01'), np.timedelta64(3, 'h'))
np.datetime64('2024-03-01T10:00'), np.timedelta64(3, 'h'), np.str_('txt'), np.bytes_(b'raw'), np.void(b'ab')
# %%
ts = pd.Timestamp('2024-03-10 14:30:00', tz='America/Sao_Paulo')
ts, pd.Timestamp('2024-01-01'), pd.Timedelta(days=1, hours=2, seconds=3.5), pd.Period('2024-03', freq='M'), pd.Period('2024Q1'), pd.Interval(0, 5, closed='left'), pd.NaT, pd.NA
# %%
[pd.Timestamp('2024-01-01'), pd.Timedelta('90min')], {'p': pd.Period('2024-01-01', 'D'), 'i': pd.Interval(0.5, 1.5)}
# %%
print(ts, pd.Timedelta('90min'), pd.Period('2024-03', 'M'), pd.Interval(0, 5), pd.NaT, pd.NA)
# %%
cats = pd.Categorical(['low', 'high', 'mid', 'low', None], categories=['low', 'mid', 'high'], ordered=True)
cats, cats.codes, pd.CategoricalDtype(['a', 'b'])
# %%
pd.IntervalIndex.from_breaks([0, 1, 5, 10]), pd.period_range('2024-01', periods=3, freq='Q'), pd.timedelta_range('1h', periods=3, freq='30min')
# %%
pd.Series([pd.Timestamp('2024-01-01', tz='UTC'), pd.NaT]), pd.Series([pd.Interval(0, 1), pd.Interval(1, 3)]), pd.Series(pd.array([1, None], dtype='Int8'))
