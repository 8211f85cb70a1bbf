# %%
import io
from pathlib import Path
import numpy as np
from PIL import Image as PILImage
from IPython.display import Image, display
arr = (np.indices((48, 64)).sum(axis=0) * 3 % 256).astype(np.uint8)
PILImage.fromarray(arr).save(Path('gradient.png'))
img = Image(filename='gradient.png', width=128, height=96)
print(img.width, img.height, img.format, img.embed)
img
# %%
Image('gradient.png')
# %%
with open('gradient.png', 'rb') as f:
    raw = f.read()
display(Image(data=raw, format='png', metadata={'alt': 'gradient'}), Image(raw, retina=True))
# %%
buf = io.BytesIO()
PILImage.fromarray(arr).convert('RGB').save(buf, format='JPEG', quality=80)
jpg = Image(data=buf.getvalue(), format='jpeg')
sorted(jpg._repr_mimebundle_()[0]), len(jpg.data) > 100
# %%
Path('sprite.bmp').write_bytes(raw)
Image(filename='sprite.bmp')
# %%
Image(url='https://example.com/chart.png', embed=False, width=200)
# %%
rgba = PILImage.new('RGBA', (40, 20), (255, 0, 0, 128))
rgba
# %%
pal = PILImage.fromarray(arr).convert('P', palette=PILImage.ADAPTIVE, colors=8)
display(pal)
pal.mode, pal.size, len(pal.getpalette()) // 3
# %%
big = PILImage.fromarray(np.random.default_rng(0).integers(0, 255, (600, 900, 3), dtype=np.uint8))
big.thumbnail((300, 300))
big.size, big
# %%
gray = PILImage.fromarray(arr, mode='L').resize((32, 24))
print(repr(gray)[:40])
gray
# %%
import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 2, figsize=(6, 3))
axes[0].imshow(np.asarray(rgba))
axes[1].imshow(np.asarray(gray), cmap='gray')
for ax in axes:
    ax.axis('off')
plt.tight_layout()
plt.show()
# %%
from IPython.display import Video, FileLinks, ProgressBar, Javascript
Path('clip.mp4').write_bytes(b'\x00\x00\x00\x18ftypmp42')
Video('clip.mp4')
# %%
Video('clip.mp4', embed=True, width=320)
# %%
Video(b'\x00\x00', embed=True)
# %%
Path('reports').mkdir(exist_ok=True)
for name in ['b.csv', 'a.csv', 'notes.txt']:
    Path('reports', name).write_text('x')
FileLinks('reports', included_suffixes=['.csv'])
# %%
bar = ProgressBar(10)
bar._progress = 4
bar
# %%
for _ in ProgressBar(3):
    pass
print('done')
# %%
class Report:
    def __init__(self, title, rows):
        self.title, self.rows = title, rows
    def _repr_mimebundle_(self, include=None, exclude=None):
        html = '<h3>%s</h3><ul>%s</ul>' % (self.title, ''.join(f'<li>{r}</li>' for r in self.rows))
        bundle = {'text/html': html, 'text/markdown': f'### {self.title}',
                  'application/json': {'title': self.title, 'n': len(self.rows)}}
        return bundle, {'application/json': {'expanded': False}}
    def __repr__(self):
        return f'Report({self.title!r}, {len(self.rows)} rows)'
r = Report('Q3', ['revenue up', 'churn flat'])
display(r, include=['text/html', 'text/plain'])
display(r, exclude=['text/html', 'application/json'])
r
# %%
class Gauge:
    def __init__(self, value):
        self.value = value
    def _ipython_display_(self):
        print(f'gauge at {self.value:.0%}')
        display({'text/plain': f'Gauge({self.value})', 'text/html': f'<meter value="{self.value}"></meter>'},
                raw=True, metadata={'text/html': {'isolated': True}})
g = Gauge(0.42)
g
# %%
display(g, Gauge(0.9))
_
# %%
class Node:
    def __init__(self, name):
        self.name, self.children = name, []
    def _repr_pretty_(self, p, cycle):
        if cycle:
            p.text(f'Node({self.name}, ...)')
            return
        with p.group(4, f'Node({self.name}, [', '])'):
            for i, c in enumerate(self.children):
                if i:
                    p.text(',')
                    p.breakable()
                p.pretty(c)
root = Node('root')
root.children = [Node(f'child-{i:02d}') for i in range(6)] + [root]
root
# %%
[root, {'k': root}]
# %%
from IPython.display import update_display, clear_output, HTML
status = display(HTML('<b>queued</b>'), display_id='job-7')
for step in ['running', 'writing', 'done']:
    update_display(HTML(f'<b>{step}</b>'), display_id='job-7')
print(type(status).__name__, status.display_id)
# %%
import time
for epoch in range(3):
    clear_output(wait=True)
    print(f'epoch {epoch}: loss={1 / (epoch + 1):.3f}')
    display(HTML(f'<progress value="{epoch}" max="2"></progress>'))
# %%
import sympy as sp
x, y = sp.symbols('x y')
expr = sp.expand((x + y) ** 3)
expr
# %%
sp.latex(sp.Integral(sp.exp(-x ** 2), (x, -sp.oo, sp.oo))), sp.integrate(sp.exp(-x ** 2), (x, -sp.oo, sp.oo))
# %%
M = sp.Matrix([[1, x], [y, 2]])
M.det(), M.inv()
# %%
print(sp.pretty(sp.sqrt(x) / (1 + y), use_unicode=False))
sp.solve(x ** 2 - 2, x)
# %%
from sympy.printing.defaults import Printable
from sympy.printing.printer import Printer
# keep IPython's own printers, to switch sympy's pretty printing off again below
saved_printers = {m: dict(f.type_printers) for m, f in get_ipython().display_formatter.formatters.items()}
saved_latex = Printable._repr_latex_
sp.init_printing()
expr
# %%
M
# %%
[1, 2.5, x ** 2], {x: 1}
# %%
sp.Rational(3, 4) + 1, 7
# %%
for m, f in get_ipython().display_formatter.formatters.items():
    f.type_printers.clear()
    f.type_printers.update(saved_printers[m])
Printable._repr_latex_, Printable._repr_png_ = saved_latex, Printable._repr_disabled
Printer.set_global_settings(use_unicode=None)
[1, 2.5, x ** 2], expr
# %%
import pandas as pd
scores = pd.DataFrame({'team': ['red', 'blue', 'green'], 'q1': [0.81, 0.765, 0.9],
                       'q2': [0.7, 0.88, 0.845]}).set_index('team')
scores.style.format('{:.1%}').highlight_max(axis=0, color='#cfc')
# %%
styled = scores.style.background_gradient(cmap='Blues').format(precision=2)
html = styled.to_html()
print(html.count('background-color'), '#08306b' in html)
# %%
scores.to_html(float_format='{:.2f}'.format, classes='table')
# %%
scores.to_markdown()
# %%
scores.style.set_caption('Quarterly scores').hide(axis='index').bar(subset=['q1'], color='#fa0')
# %%
print(scores.style.format('{:.2f}').to_latex(hrules=True))
# %%
from IPython.display import YouTubeVideo, Markdown, SVG, display_png, display_json, display_pretty, display_latex
YouTubeVideo('dQw4w9WgXcQ', width=400, start=30)
# %%
Path('notes.md').write_text('# Findings\n\n* one\n* two\n')
Path('dot.svg').write_text('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><circle r="4" cx="4" cy="4"/></svg>')
display(Markdown(filename='notes.md'), SVG(filename='dot.svg'))
# %%
display_png(raw, raw=True)
display_json({'rows': 3, 'ok': True}, raw=True)
display_pretty('plain words', raw=True)
display_latex(r'$\alpha^2$', raw=True)
# %%
display_png(Image(raw))
display_json([1, 2, 3])
# %%
PILImage.new('1', (16, 8)), PILImage.new('I;16', (4, 4))
# %%
display(PILImage.new('1', (16, 8)), PILImage.new('LA', (6, 6)))
# %%
PILImage.new('RGB', (2400, 1600), 'teal')
# %%
class Plot:
    def _repr_html_(self):
        return '<div id="plot"></div>', {'isolated': True}
    def _repr_png_(self):
        return raw, {'width': 32}
    def _repr_json_(self):
        return '{"as": "text"}'
try:
    display(Plot())
except AssertionError as e:
    print('not shown:', e)
# %%
class Plot2(Plot):
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {'application/json': '{"as": "text"}', 'text/plain': 'Plot2()'}
Plot2()
