# %%
import os, re, glob
for f in glob.glob('nb60_*') + glob.glob('ipython_log.py*'):
    os.remove(f)
def from_line(path, first):
    # With -o, the session's input comes with each result, found by its execution
    # count: what a long session shows there differs from a fresh one's.
    lines = open(path).read().splitlines()
    return lines[lines.index(first):]
def from_here(path):
    # A log starts with the whole session's input: from this notebook's first cell on.
    lines = open(path).read().splitlines()
    head = lines[:2] if lines[:1] == ['# IPython log file'] else []  # none in 'append' mode
    return head + lines[lines.index('import os, re, glob'):]
a = 1
a * 2
# %%
%logstate
# %%
%logon
# %%
%logstart nb60_session.py
# %%
b = a + 1
b
# %%
%logoff
# %%
not_logged = 3
# %%
%logoff
# %%
%logon
# %%
%%capture captured
print('inside capture')
c = 4
# %%
def shout(text):
    return text.upper()
shout('logged')
# %%
!echo shell line
# %%
%logstate
# %%
%logstart
# %%
%logstop
# %%
%logstop
# %%
print(from_here('nb60_session.py'))
# %%
%logstart -q -r -o nb60_raw.log over
# %%
'raw log from here'
# %%
$a = 5
# %%
{'k': [1, 2, 3]}
# %%
x = 1; x
# %%
1 +
# %%
%logstop
print(from_line('nb60_raw.log', "'raw log from here'"))
# %%
%logstart -t -o nb60_times.log append
# %%
'with a time'
# %%
%logstop
stamp = re.compile(r'^# \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d$')
print(['<time>' if stamp.match(l) else l for l in from_line('nb60_times.log', "'with a time'")])
# %%
%logstart nb60_bad.py nomode
# %%
%logstart -x
# %%
get_ipython().logger.logfname, get_ipython().logger.logmode, get_ipython().logfile
# %%
%logstart -q
%logstop
%logstart -q
%logstop
%logstart -q
%logstop
sorted(glob.glob('ipython_log.py*'))
# %%
%logstart -q nb60_backup.py
%logstop
%logstart -q nb60_backup.py
%logstop
sorted(glob.glob('nb60_backup*'))
# %%
%logstart -q nb60_three.py words here
%logstate
%logstop
# %%
lg = get_ipython().logger
lg.log_active, lg.log_output, lg.log_raw_input, lg.timestamp, lg.logfile
# %%
%config LoggingMagics
# %%
%config LoggingMagics.quiet = True
# %%
%config LoggingMagics.quiet
# %%
%logstart nb60_quiet.py over
# %%
%config LoggingMagics.quiet = 5
# %%
%config LoggingMagics.quiet = False
%logstop
%config LoggingMagics.quiet
# %%
for f in set(glob.glob('nb60_*') + glob.glob('ipython_log.py*') + glob.glob('*words here*')):
    os.remove(f)
sorted(glob.glob('nb60_*'))
