# %%
from IPython.display import display, HTML, Markdown, Latex, JSON, Image, Math
display(HTML('<b>bold</b>'))
# %%
display(Markdown('# Title\n\n*italic*'))
# %%
display(Latex(r'$\alpha + \beta$'))
# %%
Math(r'\int_0^1 x\,dx')
# %%
JSON({'a': [1, 2, {'b': None}]})
# %%
HTML('<table><tr><td>1</td></tr></table>')
# %%
import pandas as pd
df = pd.DataFrame({'x': [1, 2], 'y': ['a', 'b']})
display(df)
display(df.head(1), df.tail(1))
print('after')
# %%
display('a string', 42, [1, 2], {'k': 'v'})
# %%
import io
import matplotlib
matplotlib.use('Agg') if False else None
import numpy as np
from PIL import Image as PILImage
img = PILImage.fromarray(np.zeros((20, 30, 3), dtype=np.uint8))
buf = io.BytesIO()
img.save(buf, format='PNG')
Image(data=buf.getvalue())
# %%
img
# %%
class Report:
    def __init__(self, title):
        self.title = title
    def _repr_html_(self):
        return f'<h2>{self.title}</h2>'
    def _repr_markdown_(self):
        return f'## {self.title}'
    def __repr__(self):
        return f'Report({self.title!r})'
Report('Q1')
# %%
display(Report('Q2'), Report('Q3'))
# %%
from IPython.display import clear_output
print('x')
display(HTML('<i>i</i>'), metadata={'isolated': True})
# %%
from IPython.core.display import display as core_display
core_display(Markdown('**core**'))
# %%
import IPython
IPython.display.display(HTML('<p>via module</p>'))
# %%
df.style.highlight_max(color='lightgreen')
# %%
df.to_html()[:60]
# %%
print(df.to_markdown() if hasattr(df, 'to_markdown') else 'no')
