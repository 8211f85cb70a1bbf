# %%
import numpy as np
import pandas as pd
rng = np.random.default_rng(42)
idx = pd.date_range('2024-03-30 22:00', periods=48, freq='h', tz='Europe/Berlin')
readings = pd.DataFrame({
    'sensor': np.tile(['s1', 's2', 's3'], 16),
    'temp': np.round(rng.normal(21, 3, 48), 2),
    'humidity': np.round(rng.uniform(30, 70, 48), 1),
}, index=idx)
readings.head(6)
# %%
readings.index[:4], readings.index.tz, readings.index[0].utcoffset()
# %%
utc = readings.tz_convert('UTC')
utc.index[[0, -1]], utc['temp'].between_time('01:00', '03:00').shape
# %%
readings['local_hour'] = readings.index.hour
readings.reset_index(names='ts').dtypes
# %%
daily = readings.groupby('sensor').resample('D')['temp'].agg(['min', 'max', 'mean']).round(2)
daily
# %%
daily.xs('s2', level='sensor'), daily.swaplevel().sort_index().head(4)
# %%
idx_slice = pd.IndexSlice
daily.loc[idx_slice[['s1', 's3'], :], ['max']]
# %%
summary = readings.groupby('sensor').agg(
    readings=('temp', 'size'),
    temp_mean=('temp', 'mean'),
    temp_p90=('temp', lambda s: s.quantile(0.9)),
    humid_range=('humidity', lambda s: s.max() - s.min()),
)
summary
# %%
readings['temp_z'] = readings.groupby('sensor')['temp'].transform(lambda s: (s - s.mean()) / s.std())
readings['delta'] = readings.groupby('sensor')['temp'].diff()
readings['prev'] = readings.groupby('sensor')['temp'].shift(1)
readings[['sensor', 'temp', 'temp_z', 'delta', 'prev']].head(7)
# %%
s1 = readings.loc[readings['sensor'] == 's1', 'temp'].rename('s1_temp')
pd.concat([s1, s1.ewm(span=4).mean().rename('ewm'), s1.expanding().max().rename('running_max')], axis=1).tail(5)
# %%
s1.describe(), s1.idxmax(), s1.name
# %%
readings[['temp', 'humidity', 'temp_z']].corr().round(3)
# %%
readings['band'] = np.where(readings['temp'] > 24, 'hot', np.where(readings['temp'] < 18, 'cold', 'ok'))
readings['band'].value_counts(normalize=True).round(3), readings['temp'].clip(18, 24).agg(['min', 'max'])
# %%
pd.set_option('display.max_rows', 8)
readings[['sensor', 'temp']]
# %%
pd.set_option('display.max_columns', 4)
readings
# %%
pd.reset_option('display.max_rows')
pd.reset_option('display.max_columns')
pd.Series([1e-12, 3.5e9, -0.000123, 12345678901.5], name='scales')
# %%
pd.DataFrame({'tiny': [1e-10, 2.5e-8], 'huge': [7.1e15, 3e20], 'mixed': [0.5, 1e7]})
# %%
counts, edges = np.histogram(readings['temp'], bins=5)
vals, freq = np.unique(readings['sensor'].to_numpy(), return_counts=True)
counts, edges.round(2), dict(zip(vals, freq)), np.percentile(readings['temp'], [5, 50, 95]).round(2)
# %%
a = np.array([[2.0, -1.0], [1.0, 2.0]])
w, v = np.linalg.eig(a)
w, v
# %%
signal = np.sin(2 * np.pi * 3 * np.arange(8) / 8)
spectrum = np.fft.rfft(signal)
spectrum.round(6), np.abs(spectrum).round(3), np.fft.rfftfreq(8, d=1 / 8)
# %%
m = rng.integers(0, 5, (3, 4))
np.einsum('ij,ij->i', m, m), np.einsum('ij->j', m), m.T @ m
# %%
with np.errstate(divide='ignore', invalid='ignore'):
    ratios = np.array([1.0, 0.0, -2.0]) / np.array([0.0, 0.0, 4.0])
ratios, np.nan_to_num(ratios, posinf=999), np.isfinite(ratios)
# %%
old = np.seterr(all='raise')
try:
    np.array([1.0]) / np.array([0.0])
finally:
    np.seterr(**old)
# %%
np.float32(1) / 3, np.float64(1) / 3, np.longdouble(1) / 3, np.array([1, 2], dtype=np.float32) / 3, np.finfo(np.float32).eps
# %%
np.array([1 + 2j, -0.5j, 3]), np.array([1e-20, 1, 1e20]), np.array([0.1, 0.25, 100.0]), np.array([1e5, 1e-5])
# %%
pd.set_option('display.html.table_schema', True)
summary.round(2)
# %%
pd.set_option('display.html.table_schema', False)
pd.set_option('display.notebook_repr_html', False)
summary.round(2)
# %%
pd.reset_option('display.notebook_repr_html')
pd.set_option('display.show_dimensions', True)
pd.set_option('display.max_seq_items', 3)
summary.head(2), list(range(10)), pd.Index(list('abcdefgh'))
# %%
pd.reset_option('display.show_dimensions')
pd.reset_option('display.max_seq_items')
pd.set_option('display.large_repr', 'info')
pd.set_option('display.max_rows', 5)
readings[['sensor', 'temp']]
# %%
pd.reset_option('display.large_repr')
pd.reset_option('display.max_rows')
pd.set_option('display.chop_threshold', 0.01)
pd.DataFrame({'x': [0.001, 0.5, -0.009]})
# %%
pd.reset_option('display.chop_threshold')
np.set_printoptions(threshold=6, edgeitems=2)
{'weights': np.arange(20), 'bias': np.zeros(3)}
# %%
np.set_printoptions(threshold=1000, edgeitems=3)
print(summary.round(1).to_string(float_format=lambda v: f'{v:8.2f}'))
