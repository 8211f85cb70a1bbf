# %%
import os, json, csv, zipfile, pathlib
report = {'rows': 120, 'cols': ['a', 'b']}
threshold = 0.75
label = 'baseline'
def score(x):
    return x * threshold
class Model:
    pass
%who dict float str module
# %%
%who type
# %%
%whos dict float
# %%
%who_ls str
# %%
%%writefile pipeline.py
import sys
def main(argv):
    print('args:', argv[1:])
    return len(argv) - 1
if __name__ == '__main__':
    n = main(sys.argv)
    print('__name__ is', __name__, 'n =', n)
# %%
%run pipeline.py --rows 10 input.csv
# %%
n, main.__module__
# %%
%run -i pipeline.py "quoted arg" 'x y'
# %%
%%writefile failing_step.py
def parse(value):
    return int(value)
print(parse('12'))
parse('twelve')
# %%
%run failing_step.py
# %%
%%writefile exits.py
import sys
print('about to exit')
sys.exit(3)
# %%
%run exits.py
# %%
%%writefile -a pipeline.py
print('appended line ran')
# %%
%run pipeline.py
# %%
%load exits.py
# %%
%load no_such_file.py
# %%
%%writefile missing_dir/x.py
print(1)
# %%
%%capture cap --no-stderr
print('captured out')
import sys
print('warning line', file=sys.stderr)
# %%
cap.stdout, cap.stderr
# %%
%%capture cap2
print('before the error')
1 / 0
# %%
cap2.stdout
# %%
squares = [i * i for i in range(1000)]
res = %timeit -o -q -n 5 -r 2 sorted(squares)
res.loops, res.repeat, len(res.all_runs)
# %%
%alias count_lines wc -l %s
%count_lines pipeline.py
# %%
%unalias count_lines
%unalias count_lines
# %%
!printf 'b,2\na,1\nc,3\n' > small.csv
!sort small.csv | head -2
# %%
!false
print(_exit_code)
# %%
!ls no_such_file_here; echo "status=$?"
# %%
!echo to-stderr >&2 && echo to-stdout
# %%
people = !printf 'alice 30 paris\nbob 25 rome\ncarol 35 oslo\n'
people.n
# %%
people.fields(0, 2)
# %%
people.grep('o')
# %%
people.grep('bob', prune=True).s
# %%
people.sort(1, nums=True)
# %%
out = %sx echo one; echo two
out
# %%
!cd /tmp && pwd
# %%
run_id = 'r42'
%env RUN_ID={run_id}
!echo run id is $RUN_ID
os.environ['RUN_ID']
# %%
%env RUN_ID
# %%
def clean(rows, drop_na=True):
    """Drop empty rows."""
    return [r for r in rows if r]
%pdef clean
# %%
%pdoc clean
# %%
clean?
# %%
%psource clean
# %%
%pdef Model
# %%
%pdoc no_such_name
# %%
%psource len
# %%
%pycat exits.py
# %%
%%bash --out bash_out --err bash_err
echo out line
echo err line >&2
# %%
bash_out, bash_err
# %%
import subprocess
r = subprocess.run(['sh', '-c', 'echo ok; echo bad >&2; exit 2'], capture_output=True, text=True)
r
# %%
subprocess.run(['ls', 'no_such_file'], check=True, capture_output=True)
# %%
subprocess.check_output('echo $((6*7))', shell=True)
# %%
rc = os.system('exit 3')
rc, os.waitstatus_to_exitcode(rc)
# %%
path = pathlib.Path('results')
path.mkdir(exist_ok=True)
(path / 'summary.json').write_text(json.dumps(report, indent=2))
# %%
json.loads((path / 'summary.json').read_text())
# %%
with open(path / 'rows.csv', 'w', newline='') as f:
    w = csv.writer(f)
    w.writerow(['id', 'name'])
    w.writerows([(1, 'ana'), (2, 'bo')])
list(csv.DictReader(open(path / 'rows.csv')))
# %%
with zipfile.ZipFile('bundle.zip', 'w') as z:
    for p in sorted(path.iterdir()):
        z.write(p)
zipfile.ZipFile('bundle.zip').namelist()
# %%
listing = !ls results
listing
# %%
%%timeit -n1 -r1
print('timed body runs once')
# %%
%pip install --no-index --no-cache-dir --quiet no-such-package-xyz
# %%
stack = %pushd results
len(stack), os.path.basename(os.getcwd())
# %%
%popd
%popd
# %%
%reset_selective -f ^bash_
'bash_out' in globals(), 'people' in globals()
# %%
%history -l 2
# %%
import shutil
shutil.rmtree('results')
for name in ['pipeline.py', 'failing_step.py', 'exits.py', 'small.csv', 'bundle.zip']:
    os.remove(name)
