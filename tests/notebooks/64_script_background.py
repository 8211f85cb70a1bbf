# %%
# %%script --bg: the program runs on while the cell ends; --out/--err/--proc
# give its pipes and process (awaitable from a cell, as in ipykernel).
import asyncio
# %%
%%bash --bg --out bg_out --err bg_err --proc bg_proc
echo first; echo oops >&2; echo second
# %%
await bg_proc.wait()
# %%
(await bg_out.read()).decode(), (await bg_err.read()).decode()
# %%
bg_proc.returncode, type(bg_out).__name__, type(bg_proc.stdout).__name__
# %%
%%bash --bg
echo dropped
# %%
%%script bash --bg --proc sleeper --out sleeper_out
echo started; exec sleep 30
# %%
# SIGINT ends it whether it is still bash or already sleep (a bash waiting
# for a child would wait through SIGINT, and which one it meets is a race).
await sleeper_out.readline(), sleeper.returncode is None
# %%
%killbgscripts
# %%
await sleeper.wait()
# %%
%%script no_such_program_nb64 --bg
echo never
# %%
%%bash --bg --out lines_out --proc lines_proc
for i in 1 2 3; do echo line $i; done
# %%
[(await lines_out.readline()).decode() for _ in range(3)], await lines_proc.wait()
# %%
%%bash --out fg_out
echo foreground one
echo foreground two
# %%
fg_out
