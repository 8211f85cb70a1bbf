# %%
import asyncio
await asyncio.sleep(0.01)
'awaited'
# %%
async def twice(x):
    await asyncio.sleep(0)
    return 2 * x
await twice(21)
# %%
%%capture captured
print('hidden')
import sys
print('to stderr', file=sys.stderr)
from IPython.display import display, HTML
display(HTML('<p>kept</p>'))
!echo from the shell
# %%
captured.stdout, captured.stderr, len(captured.outputs)
# %%
captured.show()
# %%
%%capture
print('dropped')
# %%
%precision 3
[1/3, 2.0]
# %%
%precision %.1e
12345.678
# %%
%%html
<b>bold</b>
# %%
%%markdown
*emphasis*
# %%
from IPython.display import HTML, Markdown, Latex, JSON, display
display(HTML('<i>x</i>'), Markdown('**y**'))
# %%
Latex(r'$\alpha$')
# %%
import pandas as pd
df = pd.DataFrame({'a': [1, 2, 3], 'b': [4.5, 5.5, 6.5]})
df.describe()
# %%
df.style.highlight_max()
# %%
s = pd.Series([1, 2, 3], name='n')
s
# %%
df.plot(x='a', y='b')
# %%
x = 5
x
# %%
_ * 2
# %%
import numpy as np
np.set_printoptions(precision=3)
np.array([1/3, 2/3])
# %%
%precision 2
3.14159
# %%
%precision
3.14159
# %%
def gen():
    yield 1
gen()
# %%
{i: i * i for i in range(3)}
# %%
print('a', end='')
print('b')
# %%
import sys
print('err', file=sys.stderr)
# %%
raise KeyboardInterrupt
# %%
assert 1 == 2, 'nope'
# %%
import warnings
warnings.warn('careful')
# %%
from dataclasses import dataclass
@dataclass
class P:
    x: int
P(3)
# %%
import datetime
datetime.date(2026, 1, 2)
# %%
b'bytes'
# %%
None
# %%
[None, None]
# %%
help(len)
