"""%reset, %reset_selective, %run (files and -m modules), %history -f and
%man as IPython 8.5 runs them in ipykernel (cell by cell against a fresh
ipykernel, test_notebook_parity.same_as_a_fresh_ipykernel).

After a reset the reference's E2B startup formatters (names in its user
namespace) are gone and fail on lists, dicts and DataFrames; cellvm's live
in the executor. These cells show such values with print() only."""

import os

import pytest

pytestmark = pytest.mark.reference

from test_notebook_parity import same_as_a_fresh_ipykernel  # noqa: E402

RESET = [
    "a = 1\nb = [1]\na\n",
    "%reset -f\n",
    "_\n",
    "___\n",
    "print(sorted(globals()))\n",
    "__doc__[:20], __spec__.name, __package__, __name__\n",
    "print(repr(_i), repr(_ii), repr(_iii))\n",
    # Without -f IPython asks; no stdin under ipykernel: it goes on.
    "x = 5\n%reset\n'x' in globals(), 'In' in globals()\n",
    "%alias hi echo hi\nhi = 1\n%reset -f\n",
    "%hi\n",
    "%reset_selective\n",
    "x = 1; y = 2; xy = 3; z = 4\n%reset_selective x\nprint(sorted(k for k in globals() if not k.startswith('_')))\n",
    "%reset_selective -f ^z\n'z' in globals(), y\n",
    "%reset_selective -f (\n",
    "%reset_selective -x y\n",
    "5\n",
    "6\n",
    "%reset out\nprint(Out, repr(_), repr(__), [k for k in globals() if k[1:].isdigit()])\n",
    "%reset -f in\nprint(len(In), len(In) == len(_ih), set(In), repr(_i), repr(_ii), repr(_iii),\n"
    "      [k for k in globals() if k.startswith('_i') and k[2:].isdigit()])\n",
    "print(repr(_i), repr(_ii), len(In))\n",
    "%reset dhist\nprint(_dh)\n",
    "import numpy as np\narr = np.zeros(2); n = 3\n%reset array\nprint('arr' in globals(), n)\n",
    "%reset -s\nprint(sorted(k for k in globals() if not k.startswith('_')), repr(_i)[:9])\n",
    "%reset -s out\n'n' in globals()\n",
    "%reset --aggressive\n",
    "%reset -f foo OUT\n",
    "%reset -x\n",
]


def test_reset_as_in_ipykernel(agent):
    same_as_a_fresh_ipykernel(agent, RESET)


# The same absolute directory on both sides (ipykernel's and the context's
# own user), made and removed by the cells.
RUN_DIR = f"/tmp/cellvm-run-parity-{os.getpid()}"

RUN = [
    f"import os\nos.makedirs({RUN_DIR!r})\nos.chdir({RUN_DIR!r})\nos.symlink('.', 'sub')\n",
    "%%writefile w.py\nimport sys, warnings\nwarnings.warn('hello')\n"
    "print(__file__, sys.argv[0], sys._getframe().f_code.co_filename)\n",
    "%run w.py\n",
    "%run ./w.py a\n",
    "%run sub/w.py\n",
    "%%writefile e.py\ndef f():\n    1/0\nf()\n",
    "%run e.py\n",
    "%run sub/e.py\n",
    "%xmode Plain\n",
    "%run e.py\n",
    "%xmode Context\n",
    "%%writefile m1.py\nimport sys\nprint('m1', __name__)\nsys.exit(3)\n",
    "%%writefile m2.py\ndef g():\n    raise ValueError('boom')\ng()\n",
    "%%writefile m3.py\nimport sys\nsys.exit(0)\n",
    "%run -m m1\n",
    "%run -m m2\n",
    "%run -m m2\n",
    "%run -e -m m1\n",
    "%run -m m3\n",
    "import warnings\nwarnings.resetwarnings()\nwarnings.simplefilter('default')\n%run -m m2\n",
    "%history -f h.txt\n",
    "%history -f h.txt\nprint(open('h.txt').read().count('%run'))\n",
    "%man true\n",
    "%man\n",
    f"os.chdir('/')\nimport shutil\nshutil.rmtree({RUN_DIR!r})\n",
]


def test_run_history_man_as_in_ipykernel(agent):
    same_as_a_fresh_ipykernel(agent, RUN, tracebacks=True)
