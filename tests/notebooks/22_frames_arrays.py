# %%
import io
import numpy as np
import pandas as pd
df = pd.read_csv(CSV, parse_dates=['data'])
cols = pd.MultiIndex.from_product([['2025', '2026'], ['q1', 'q2']], names=['ano', 'tri'])
rows = pd.MultiIndex.from_tuples([('Sul', 'Mouse'), ('Sul', 'Teclado'), ('Norte', 'Mouse')], names=['regiao', 'produto'])
mi = pd.DataFrame(np.arange(12).reshape(3, 4) * 1.5, index=rows, columns=cols)
mi
# %%
mi.loc['Sul'], mi.stack().shape
# %%
mi.style.highlight_max(axis=0).format('{:.1f}')
# %%
mi.to_markdown()
# %%
wide = pd.DataFrame(np.arange(3 * 40).reshape(3, 40), columns=[f'coluna_{i}' for i in range(40)])
wide
# %%
wide.info(verbose=True)
# %%
pd.Series([{'a': 1}, {'b': [2, 3]}, None, [1, 2]])
# %%
pd.Series(pd.to_timedelta(['1 days 02:00:00', '3h', '-5min'])), pd.period_range('2026-01', periods=3, freq='M')
# %%
pd.Series(pd.interval_range(0, 4, closed='left'))
# %%
nullable = pd.DataFrame({
    'n': pd.array([1, None, 3], dtype='Int64'),
    'b': pd.array([True, None, False], dtype='boolean'),
    's': pd.array(['x', None, 'z'], dtype='string'),
    'f': pd.array([0.5, None, 1.5], dtype='Float64'),
})
nullable
# %%
nullable.dtypes, nullable['n'].sum(), nullable['b'].any()
# %%
cat = pd.Series(pd.Categorical(['baixo', 'alto', 'médio', 'alto'], categories=['baixo', 'médio', 'alto'], ordered=True))
cat.describe()
# %%
pd.Categorical([f'categoria_{i:02d}' for i in range(12)])
# %%
type(get_ipython()).__name__, pd.io.formats.console.in_ipython_frontend()
# %%
df.groupby('regiao')['valor'].describe().round(1)
# %%
ts = df.set_index('data')['valor']
ts.rolling('7D').sum().head(8)
# %%
pd.set_option('display.precision', 2)
pd.set_option('display.max_colwidth', 12)
pd.DataFrame({'x': [1 / 3, 2 / 3], 'txt': ['um texto bem longo aqui', 'curto']})
# %%
pd.options.display.float_format = '{:,.1f}'.format
pd.DataFrame({'grande': [1234567.891, 0.05]})
# %%
pd.reset_option('display.precision')
pd.reset_option('display.max_colwidth')
pd.reset_option('display.float_format')
pd.DataFrame({'nome': ['Ana', None, 'Zoë'], 'nota': [9.5, np.nan, 7.25], 'símbolo': ['α', 'β', '東']})
# %%
pd.DataFrame(columns=['a', 'b']), pd.Series(dtype='Int64', name='vazia')
# %%
df.head(3).T
# %%
df.describe(include='all')
# %%
caros = df[df['valor'] > 5000]
caros['desconto'] = caros['valor'] * 0.1
# %%
df[['quantidade', 'nope', 'valor']]
# %%
df.groupby('zona')
# %%
df.pivot(index='regiao', columns='produto', values='valor')
# %%
pd.DataFrame({'n': [1.0, np.nan]}).astype(int)
# %%
pd.read_csv(io.StringIO('a,b\n1,2,3\n4'))
# %%
df.apply(lambda row: row['desconto'], axis=1)
# %%
df.query('valor >')
# %%
import ast
def parse(text):
    return ast.literal_eval(text)
parse('[1,')
# %%
totals = df.groupby('regiao')['valor'].agg(['sum',
                                            'mean'
# %%
np.ones((3, 4)) * np.ones((2, 4))
# %%
people = np.array([('Ana', 31, 1.62), ('Bruno', 45, 1.80)], dtype=[('nome', 'U10'), ('idade', 'i4'), ('altura', 'f8')])
people, people[people['altura'] > 1.7]
# %%
np.ma.masked_invalid(np.array([[1.0, np.nan], [np.inf, 4.0]]))
# %%
np.arange('2026-01-01', '2026-01-04', dtype='datetime64[D]'), np.timedelta64(90, 'm')
# %%
np.random.seed(0)
np.random.rand(200, 200)
# %%
np.set_printoptions(precision=3, suppress=True, linewidth=60)
np.array([1e-8, 123456.789, np.pi] * 4)
# %%
with np.printoptions(precision=1, floatmode='fixed'):
    print(np.linspace(0, 1, 4))
np.set_printoptions(precision=8, suppress=False, linewidth=75)
np.matrix([[1, 2], [3, 4]]), np.float16(0.1), np.array(3.5), np.iinfo(np.int16)
# %%
with open('broken_step.py', 'w') as f:
    f.write('x = (1,\ny = 2\n')
%run broken_step.py
# %%
import os
os.remove('broken_step.py')
print(np.poly1d([1, 2, 3]))
# %%
np.array([1.0, 0.0]) / 0
# %%
np.int8(127) + np.int8(1)
# %%
np.fromstring(b'\x01\x02', dtype=np.uint8)
# %%
np.bool
# %%
from PIL import Image as PILImage
PILImage.fromarray(np.arange(0, 256, 16, dtype=np.uint8).reshape(4, 4), mode='L')
# %%
PILImage.fromarray(np.zeros((4, 4), dtype=np.float32))
# %%
PILImage.new('CMYK', (4, 4))
# %%
from IPython.display import Audio, Image, display
buf = io.BytesIO()
PILImage.new('RGB', (10, 6), 'blue').save(buf, format='JPEG')
display(Image(data=buf.getvalue(), width=40))
Audio(np.sin(np.linspace(0, 100, 800)), rate=8000)
# %%
Image(filename='no_such_image.png')
