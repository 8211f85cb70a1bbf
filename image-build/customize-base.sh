#!/bin/sh
# mmdebstrap --customize-hook for the base layer: "$1" is the new root.
# Everything here is independent of the cellvm binaries (those are added per
# build by build_image.py), so it is cached with the base tarball.
set -eu
root="$1"

# The user code runs as: uid/gid 1000, home /home/user. No passwd package in
# the "essential" variant, so the databases are edited directly.
grep -q '^user:' "$root/etc/passwd" || echo 'user:x:1000:1000:user:/home/user:/bin/bash' >>"$root/etc/passwd"
grep -q '^user:' "$root/etc/group" || echo 'user:x:1000:' >>"$root/etc/group"
grep -q '^user:' "$root/etc/shadow" || echo 'user:*:19000:0:99999:7:::' >>"$root/etc/shadow"
mkdir -p "$root/home/user"
# What useradd -m gives (E2B's user has them too): ~/.profile puts ~/.local/bin,
# where pip installs scripts, on the PATH of commands (bash -l).
cp -a "$root/etc/skel/." "$root/home/user/"
# The user site of Python (pip installs there: docs/IMAGE.md, "pip"). Python
# puts it on sys.path at startup only if it exists then; the executors, forked
# from a zygote started as root, add it themselves (python-embed/kernel).
mkdir -p "$root/home/user/.local/lib/python3.11/site-packages" "$root/home/user/.local/bin"
chown -R 1000:1000 "$root/home/user"
chmod 0755 "$root/home/user"

# matplotlib's font cache, built once here instead of at every boot. Every
# Python process of the guest (the executor embeds CPython with site enabled)
# gets MPLCONFIGDIR from sitecustomize, since cellvm-init passes the agent a
# fixed environment. Owned by uid 1000 because matplotlib only uses a config
# directory it can write to (the root is an overlay with a tmpfs upper layer).
mkdir -p "$root/etc/cellvm/mpl"
cat >>"$root/etc/python3.11/sitecustomize.py" <<'PY'

# cellvm: matplotlib's configuration and the font cache baked into the image.
import os as _os
_os.environ.setdefault("MPLCONFIGDIR", "/etc/cellvm/mpl")
del _os
PY
chroot "$root" env MPLCONFIGDIR=/etc/cellvm/mpl HOME=/home/user \
	python3 -c 'import matplotlib; matplotlib.use("Agg"); import matplotlib.pyplot as plt; plt.figure(); plt.plot([1, 2]); plt.savefig("/dev/null", format="png")'
ls "$root/etc/cellvm/mpl"/fontlist-*.json >/dev/null
chown -R 1000:1000 "$root/etc/cellvm/mpl"

# usrmerge (pulled in next to usr-is-merged although / is already merged)
# depends on perl: ~50 MB nobody uses at runtime. perl-base (essential) stays.
# git's dependencies on perl and liberror-perl are the stub package's
# (stub-control): its commands are C, bar a few Perl ones (docs/IMAGE.md).
purge=""
for p in usrmerge libfile-find-rule-perl libnumber-compare-perl libtext-glob-perl \
	liberror-perl perl perl-modules-5.36 libperl5.36; do
	if chroot "$root" dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
		purge="$purge $p"
	fi
done
# shellcheck disable=SC2086 # one word per package
chroot "$root" dpkg --purge --force-depends $purge

# git: Debian ships the git binary twice, as /usr/bin/git and as
# /usr/lib/git-core/git, which the dashed commands there link to. The second
# copy is kept out (dpkg-excludes.txt); a symlink stands in for it.
if [ -d "$root/usr/lib/git-core" ] && [ ! -e "$root/usr/lib/git-core/git" ]; then
	ln -s ../../bin/git "$root/usr/lib/git-core/git"
fi

# SymPy is only a dependency of fontTools (not used by matplotlib): keep it
# importable but without its 40 MB of bytecode (compiled on first import into
# the tmpfs upper layer).
find "$root/usr/lib/python3/dist-packages/sympy" -depth -type d -name __pycache__ -exec rm -rf {} +

# Test suites of the Python packages (pandas' alone is ~60 MB). Removed here,
# not by a dpkg path-exclude, because py3compile fails on missing files. The
# packages' testing helpers (numpy.testing, pandas._testing) are not "tests".
find "$root/usr/lib/python3/dist-packages" -depth -type d -name tests -prune -exec rm -rf {} +

# IPython is there for IPython.display; what it can do without, kept out of
# the 400 MB budget: jedi and parso (tab completion; IPython runs without
# them), setuptools and pkg_resources (IPython depends on them, but neither it
# nor the data stack imports them at run time), and pygments' bytecode
# (IPython imports ~20 of its modules: compiled on first import into the
# tmpfs upper layer).
dp="$root/usr/lib/python3/dist-packages"
rm -rf "$dp/jedi" "$dp/parso" "$dp/setuptools" "$dp/pkg_resources" "$dp/_distutils_hack" \
	"$dp/distutils-precedence.pth"
find "$dp/pygments" -depth -type d -name __pycache__ -exec rm -rf {} +

# glibc's iconv modules for EBCDIC code pages (IBM mainframes: the byte 0x41
# is not "A" in them): 87 modules, 2.9 MB, that only C programs converting
# mainframe text would load (Python has its own codecs). The ASCII-based IBM
# and DOS code pages (IBM437, IBM850, ...) stay.
for so in "$root"/usr/lib/x86_64-linux-gnu/gconv/IBM*.so "$root"/usr/lib/x86_64-linux-gnu/gconv/EBCDIC-*.so; do
	cs=$(basename "$so" .so)
	if [ "$(printf A | chroot "$root" iconv -f "$cs" -t UTF-8 2>/dev/null)" != A ]; then
		rm -f "$so"
	fi
done

# dpkg's checksums of the installed files (dpkg --verify, debsums): 1.5 MB the
# guest, which installs nothing, never reads. Its database of packages and file
# lists stays (dpkg -l, dpkg -S).
rm -f "$root"/var/lib/dpkg/info/*.md5sums "$root/var/lib/dpkg/status-old"

# Caches and logs of the installation.
rm -rf "$root/var/cache/apt/"* "$root/var/lib/apt/lists/"* "$root/var/log/"*
rm -f "$root/etc/machine-id"; : >"$root/etc/machine-id"
