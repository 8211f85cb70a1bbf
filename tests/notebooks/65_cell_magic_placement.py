# %%
# A cell magic works on the cell's first line only (blank lines before it
# aside); elsewhere IPython calls a line magic named %name, which
# does not exist. Agents put a comment above %%time or %%bash.
import os
# %%
# a comment first
%%time
x = 1
# %%

%%bash
echo blank line first
# %%
x = 2
%%capture
# %%
  %%bash
echo indented
# %%
%%bash
echo ok
