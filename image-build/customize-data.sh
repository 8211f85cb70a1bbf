#!/bin/sh
# mmdebstrap --customize-hook of the "data" profile, run after
# customize-base.sh: "$1" is the new root.
set -eu
root="$1"

# SymPy is a library users import in this profile (E2B lists it), no longer
# only a fontTools dependency: compile its bytecode again (customize-base.sh
# removed it), or each first import would compile ~40 MB of modules.
# (compileall: py3compile -p would also want the tests/ customize-base.sh
# deleted.)
chroot "$root" python3 -m compileall -q -j 0 /usr/lib/python3/dist-packages/sympy >/dev/null
