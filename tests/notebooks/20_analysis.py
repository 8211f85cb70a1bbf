# %%
%load_ext autoreload
%autoreload 2
import pandas as pd
import numpy as np
import matplotlib.pyplot as plt
df = pd.read_csv(CSV, parse_dates=['data'])
# %%
%%writefile reloaded_mod.py
def version():
    return 1
# %%
import reloaded_mod
reloaded_mod.version()
# %%
%%writefile reloaded_mod.py
def version():
    return 'two'
# %%
reloaded_mod.version()
# %%
%load_ext autoreload
# %%
%aimport
# %%
%mkdir -p scratch_dir
%cd scratch_dir
# %%
%%writefile -a sample.txt
alpha
beta
# %%
%ls
# %%
cat sample.txt
# %%
%cd ..
# %%
import os, time
rc = os.system('echo from os.system')
time.sleep(0.2)  # ipykernel forwards fd 1 from a thread: let it catch up
rc
# %%
import subprocess
done = subprocess.run(['echo', 'from subprocess'])
time.sleep(0.2)
done
# %%
from IPython.display import display, clear_output, update_display, HTML, Image, FileLink, Code
import time
for i in range(3):
    clear_output(wait=True)
    print(f'epoch {i}')
# %%
h = display(HTML('<p>loading</p>'), display_id=True)
h.update(HTML('<p>done</p>'))
type(h).__name__
# %%
display(HTML('<b>first</b>'), display_id='status')
update_display(HTML('<b>second</b>'), display_id='status')
# %%
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([1, 2, 3])
fig.savefig('scratch_dir/tiny.png', dpi=50)
plt.close(fig)
Image(filename='scratch_dir/tiny.png')
# %%
FileLink('scratch_dir/sample.txt')
# %%
Code('def f(x):\n    return x + 1', language='python')
# %%
pd.Series([1, None, 3], dtype='Int64')
# %%
%%bash
echo listing
ls /nonexistent_dir_xyz
# %%
%%script bash --no-raise-error
echo exit code ignored
exit 3
# %%
pd.Timestamp('2024-03-10 08:00', tz='UTC').tz_convert('America/Sao_Paulo')
# %%
pd.qcut(df['valor'], q=4).value_counts().sort_index()
# %%
sizes = pd.Categorical(['M', 'S', 'L', 'M'], categories=['S', 'M', 'L'], ordered=True)
sizes, sizes.max()
# %%
df['produto'].value_counts(normalize=True).round(3)
# %%
df.pivot_table(index='regiao', columns='produto', values='quantidade', aggfunc='sum', margins=True)
# %%
pd.crosstab(df['regiao'], df['produto'], normalize='index').round(2)
# %%
df.groupby('regiao').agg({'valor': ['sum', 'mean'], 'quantidade': 'max'}).round(1)
# %%
df.append({'regiao': 'X'}, ignore_index=True).shape
# %%
df['data'].describe()
# %%
df.set_index('data')['valor'].resample('M').agg(['sum', 'count'])
# %%
%env NO_SUCH_KEY_XYZ
# %%
%set_env GREETING=hello
!echo $GREETING
# %%
%alias shout echo %s!
%shout hey there
# %%
%timeit -n1 -r1 1/0
# %%
counts, edges, patches = plt.hist(df['valor'], bins=5)
plt.xlabel('valor')
# %%
plt.bar(['a', 'b'], [3, 5])
# %%
def make_plot(values):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot(values)
    ax.set_title('from a function')
    return fig
make_plot([1, 4, 9])
# %%
plt.plot([1, 2])
plt.show()
plt.show()
# %%
axes = df[['valor', 'quantidade']].plot(subplots=True, figsize=(6, 4))
axes.shape
# %%
ax = df.plot.scatter(x='quantidade', y='valor')
ax.legend(['pontos'])
# %%
import matplotlib
matplotlib.use('Agg')
plt.plot([1, 3])
plt.show()
# %%
%matplotlib inline
plt.plot([3, 1])
# %%
import shutil
shutil.rmtree('scratch_dir')
os.remove('reloaded_mod.py')
