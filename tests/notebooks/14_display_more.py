# %%
from IPython.display import display, HTML, Markdown, SVG, Javascript, IFrame, Pretty, Code, FileLink, Image
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'))
# %%
Javascript('console.log(1)')
# %%
Markdown('| a | b |\n|---|---|\n| 1 | 2 |')
# %%
IFrame('https://example.com', width=300, height=200)
# %%
Pretty('pretty text')
# %%
Image(url='https://example.com/x.png')
# %%
Image(url='https://example.com/x.png', width=100)
# %%
import pandas as pd
df = pd.DataFrame({'a': [1.5, None], 'b': ['x', None]})
display(df.head(1))
df
# %%
print('before')
display(Markdown('**middle**'))
print('after')
# %%
display(HTML('<p>one</p>'), Markdown('two'))
'result'
# %%
h = display(HTML('<p>x</p>'), display_id='fixed-id')
type(h).__name__
# %%
h.update(HTML('<p>y</p>'))
# %%
class Both:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {'text/plain': 'both-plain', 'text/html': '<b>both</b>'}
Both()
# %%
class Broken:
    def _repr_html_(self):
        raise ValueError('html failed')
    def __repr__(self):
        return 'Broken()'
Broken()
# %%
class NotStr:
    def _repr_html_(self):
        return 42
    def __repr__(self):
        return 'NotStr()'
NotStr()
# %%
# The same warning again: Python's registry shows it once.
NotStr()
# %%
import numpy as np
display(np.arange(3), np.float64(2.5))
# %%
from IPython.display import Latex
Latex(r'\begin{equation} E = mc^2 \end{equation}')
# %%
from IPython.display import JSON
JSON([1, 2, 3])
# %%
display(*[HTML(f'<i>{i}</i>') for i in range(3)])
# %%
from IPython.display import display_html, display_markdown
display_html('<b>raw html</b>', raw=True)
display_markdown('*raw md*', raw=True)
# %%
from IPython import display as ipd
ipd.display(ipd.HTML('<u>u</u>'))
# %%
from IPython.core.display import HTML as CoreHTML
CoreHTML('<s>core</s>')
