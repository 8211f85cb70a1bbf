"""e2b_code_interpreter.charts under E2B's module name: cellvm.charts."""

from cellvm.charts import *  # noqa: F401,F403
