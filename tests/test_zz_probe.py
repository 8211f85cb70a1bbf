import sys
sys.path.insert(0, "/work/main/tests")
from test_executor_harness import *  # noqa
CELLS = ["from IPython.core.interactiveshell import InteractiveShell\nInteractiveShell.ast_node_interactivity = 'all'",
 "1\n2\nx = 3\nx",
 "for i in range(2):\n    i\nprint('p')\n'a'",
 "1\n2;",
 "get_ipython().ast_node_interactivity",
 "InteractiveShell.ast_node_interactivity = 'last'",
 "1\nfor i in range(2):\n    i",
 "%config InteractiveShell.ast_node_interactivity='last_expr_or_assign'",
 "y = 5",
 "y += 1",
 "z: int = 4",
 "a, b = 1, 2",
 "get_ipython().ast_node_interactivity = 'none'",
 "3",
 "get_ipython().ast_node_interactivity = 'bogus'",
 "get_ipython().ast_node_interactivity = 'all'",
 "1\nprint('x')\n2\nbreak\n5",
 "import sys; sys.displayhook(7)",
 "Out, _",
 "InteractiveShell.ast_node_interactivity = 'foo'",
 "1",
 "InteractiveShell.ast_node_interactivity = 'last_expr'\nget_ipython().ast_node_interactivity = 'last_expr'",
 "1\n2",
]
def test_probe(ex):
    for code in CELLS:
        r = ex.run(code)
        print(repr(code[:50]), [(t, b.get('data', {}).get('text/plain') if isinstance(b, dict) and 'data' in b else b.get('text') if isinstance(b, dict) else b) for t, b in r.events if t != 32784], r.error and (r.error['name'], r.error['value']))
