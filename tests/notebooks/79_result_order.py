# A result is formatted before the kernel stores it (Out, _N, _), as
# IPython's displayhook does it: a repr that reads them sees them as they
# were before. A run_cell's ExecutionResult holds its value, Out included;
# a ";" is looked for in the last input stored in history.
# %%
class Probe:
    def __repr__(self):
        return f"Probe: {len(Out)} results before, _ is a {type(_).__name__}"
10
# %%
Probe()
# %%
Probe()
# %%
(Out, len(Out))
# %%
r = get_ipython().run_cell("Out")
# %%
r.result is Out, len(Out)
# %%
# Whether a result is shown is decided by IPython's last stored input: a
# nested cell stored in history is that input for the rest of the cell.
get_ipython().run_cell("41;", store_history=True)
42
# %%
get_ipython().run_cell("43;")
44
# %%
r = get_ipython().run_cell("45", store_history=True);
r.result
