# %%
import pandas as pd
import numpy as np
import warnings
df = pd.DataFrame({'team': ['a', 'b', 'a', 'c'], 'city': ['x', 'y', 'x', 'z'], 'pts': [3, 5, 1, 4], 'ast': [1.5, 2.0, 0.5, 3.0]})
df.groupby('team').mean()
# %%
df.groupby('team').sum()
# %%
df.append({'team': 'd', 'pts': 0}, ignore_index=True)
# %%
for name, col in df.iteritems():
    pass
name
# %%
df.mad()
# %%
pd.Int64Index([1, 2, 3])
# %%
s = pd.Series([1, 2, 3], index=['a', 'b', 'c'])
s[0], s[-1]
# %%
df['pts'][0] = 100
df
# %%
sub = df[df.pts > 2]
sub['flag'] = True
sub
# %%
pd.set_option('mode.chained_assignment', None)
sub['flag2'] = False
pd.reset_option('mode.chained_assignment')
sub.shape
# %%
pd.to_datetime(['2024-13-01', '2024-01-01'], errors='coerce')
# %%
pd.to_datetime(['01/02/2024', '13/02/2024'])
# %%
pd.Series([1, 'a', 2.5]).astype(float)
# %%
pd.concat([df, pd.DataFrame({'team': ['e']})]).tail(2)
# %%
np.array([1, 2]) == 'a'
# %%
warnings.warn('from the notebook', DeprecationWarning)
# %%
def old_api():
    warnings.warn('old_api is deprecated', DeprecationWarning, stacklevel=2)
old_api()
# %%
warnings.warn('pending', PendingDeprecationWarning)
warnings.warn('future', FutureWarning)
# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    df.groupby('team').mean()
[str(w.category.__name__) for w in caught]
# %%
styled = df.style.format({'ast': '{:.2f}'}).set_caption('Scores').hide(axis='index')
styled
# %%
df.style.bar(subset=['pts'], color='#5fba7d').highlight_min(subset=['ast'])
# %%
df.style.set_table_styles([{'selector': 'th', 'props': [('color', 'red')]}]).set_properties(**{'text-align': 'left'})
# %%
html = df.style.to_html()
html.count('<tr>'), type(df.style).__name__
# %%
df.style.applymap(lambda v: 'color: red' if isinstance(v, (int, float)) and v > 2 else '')
# %%
df.style.format(precision=1, thousands=',').format_index(str.upper, axis=1)
# %%
display(df.style.hide(axis='columns'), df.head(1))
# %%
df.style.to_latex()[:60]
# %%
pd.DataFrame(np.arange(12).reshape(3, 4)).style.background_gradient(axis=None, cmap='Blues')
