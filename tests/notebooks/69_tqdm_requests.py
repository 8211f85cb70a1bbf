# %%
# tqdm as notebooks use it (std bars on stderr without a terminal, the
# auto/notebook fallbacks without ipywidgets, pandas' progress_apply), and
# requests' errors without a network (a request made in the VM: tests/test_image.py).
import sys, io
from tqdm import tqdm, trange
for i in tqdm(range(3), bar_format='{l_bar}{bar}| {n_fmt}/{total_fmt}', mininterval=0):
    pass
# %%
for i in trange(2, desc='work', bar_format='{desc}: {n_fmt}/{total_fmt}', file=sys.stdout):
    print('item', i)
# %%
from tqdm.auto import tqdm as atqdm
atqdm
# %%
list(atqdm(range(2), bar_format='{n_fmt}/{total_fmt}'))
# %%
from tqdm.notebook import tqdm as ntqdm
# %%
import pandas as pd
tqdm.pandas(bar_format='{n_fmt}/{total_fmt}')
pd.Series([1, 2, 3]).progress_apply(lambda x: x * 2)
# %%
t = tqdm(total=10, disable=True)
t.update(5); t.n, t.disable
# %%
with tqdm(total=4, bar_format='{n_fmt}/{total_fmt}', mininterval=0) as bar:
    for _ in range(4):
        bar.update(1)
bar
# %%
import tqdm as tqdm_mod
tqdm_mod.__version__
# %%
tqdm.write('written')
# %%
t = tqdm(range(3), bar_format='{n_fmt}', file=sys.stdout, mininterval=0)
t.ncols, t.dynamic_ncols, t.pos
# %%
t.close()
# %%
import requests
requests.__version__, requests.codes.ok
# %%
requests.get('ftp://example.com/file', timeout=2)
# %%
requests.get('http://', timeout=2)
# %%
r = requests.Request('GET', 'http://example.com/a', params={'q': 'x y'}).prepare()
r.url, r.method
# %%
import chardet, charset_normalizer
chardet.detect('héllo wörld'.encode('latin-1'))['encoding'], str(charset_normalizer.from_bytes('héllo'.encode('utf-8')).best())
