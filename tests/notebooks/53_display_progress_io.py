# %%
import sys, time, os, subprocess
from IPython.display import display, clear_output, update_display, HTML, Markdown, JSON, Pretty, Code, FileLink, ProgressBar
# %%
sys.stdout.write('written\n')
# %%
n = sys.stdout.write('no newline')
n
# %%
print('a', 'b', sep='|', end='!\n')
print(*range(5), sep=', ')
print()
# %%
print('progress', end='\r')
print('overwritten')
# %%
for i in range(3):
    sys.stdout.write(f'\r{i}')
    sys.stdout.flush()
sys.stdout.write('\n')
# %%
sys.stderr.write('err line\n')
print('out line')
sys.stderr.write('err again\n')
# %%
# ipykernel forwards a child's fd output from a thread: under load it can
# reach the next cell, so the cell waits for it before it ends.
rc = os.system('echo from os.system; echo to err >&2')
time.sleep(0.5)
rc
# %%
subprocess.run(['echo', 'captured'], capture_output=True, text=True)
# %%
subprocess.run('echo direct; exit 1', shell=True).returncode
# %%
r = subprocess.run(['ls', '/nope'], capture_output=True, text=True)
r.returncode, r.stderr.strip()
# %%
subprocess.check_output(['false'])
# %%
print(subprocess.check_output('printf "x\\ny"', shell=True))
# %%
Pretty('pretty text'), JSON({'a': [1, 2]})
# %%
Code('def f():\n    return 1', language='python')
# %%
FileLink('some_file.csv')
# %%
pb = ProgressBar(10)
pb
# %%
import textwrap, pprint
pprint.pprint({'k' * 10: list(range(30)), 'z': {'nested': [{'a': 1}] * 3}}, width=60)
# %%
print(textwrap.fill('lorem ipsum dolor sit amet ' * 8, width=50))
# %%
print('\t'.join(['col1', 'col2']), '\n' + '-' * 20)
print('{:<10}|{:>8}|{:^6}'.format('left', 'right', 'mid'))
print(f'{3.14159:.2f} {1234567:,} {0.25:.0%} {255:#x} {42:08b}')
# %%
help(len)
# %%
import json
help(json.dumps)
# %%
print(repr(print.__doc__[:40]))
len.__doc__
# %%
dir()[:3], len(dir(__builtins__)) > 100
# %%
vars(type('K', (), {'a': 1}))['a'], locals() is globals()
# %%
__name__, __builtins__.__name__ if hasattr(__builtins__, '__name__') else type(__builtins__)
# %%
globals()['injected'] = 5
injected
# %%
# A long session: Out keeps 1000 results, then IPython drops the oldest fifth.
Out.clear()
Out.update({-n: n for n in range(1, 1001)})
len(Out)
# %%
len(Out), min(Out), max(Out) > 0
