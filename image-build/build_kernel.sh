#!/bin/sh
# `make kernel`: a minimal kernel with every driver the guest needs built in,
# from Debian's linux-source (same 6.1 tree as the cloud kernel): `make
# allnoconfig` with image-build/kernel/cellvm.config forced on top, so the
# build compiles only what the guest uses (docs/IMAGE.md: ~10 minutes on two
# cores). Boots without an initramfs (root=/dev/vda ro init=/sbin/cellvm-init)
# and has no modules to load. Output: OUT/bzImage (QEMU), OUT/vmlinux
# (Firecracker, Cloud Hypervisor, QEMU via PVH), OUT/config and OUT/release
# (uname -r).
# Needs: build-essential flex bison bc libelf-dev lz4, apt sources with
# linux-source. JOBS=n sets make's -j (default: the CPU count).
set -eu
out="${1:-build/kernel}"
jobs="${JOBS:-$(nproc)}"
here="$(cd "$(dirname "$0")" && pwd)"
fragment="$here/kernel/cellvm.config"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$out"

for tool in gcc make flex bison bc lz4 perl; do
	command -v "$tool" >/dev/null || { echo "kernel: $tool missing (see docs/IMAGE.md)" >&2; exit 1; }
done
[ -e /usr/include/gelf.h ] || { echo "kernel: libelf-dev missing (objtool needs it)" >&2; exit 1; }

if [ ! -d src ]; then
	pkg="$(apt-cache depends linux-source | sed -n 's/.*Depends: \(linux-source-[0-9.]*\)$/\1/p' | head -1)"
	[ -n "$pkg" ] || { echo "kernel: cannot resolve linux-source (apt-get update?)" >&2; exit 1; }
	echo "[kernel] apt-get download $pkg"
	rm -rf pkg src.tmp "$pkg"_*.deb
	apt-get download -q "$pkg"
	dpkg-deb -x "$pkg"_*.deb pkg
	echo "[kernel] unpacking the source"
	mkdir src.tmp
	tar -C src.tmp --strip-components=1 -xaf pkg/usr/src/"$pkg".tar.*
	rm -rf pkg "$pkg"_*.deb
	mv src.tmp src # only a complete tree counts as unpacked
fi

cd src
echo "[kernel] configuring: allnoconfig + $(basename "$fragment")"
# KCONFIG_ALLCONFIG forces the fragment's values; everything else allnoconfig
# can switch off is off.
make -s KCONFIG_ALLCONFIG="$fragment" allnoconfig
# Every line of the fragment must have survived (an option whose dependency
# we did not enable is silently dropped).
missing=0
while read -r line; do
	grep -qxF "$line" .config || { echo "kernel: $line did not stick" >&2; missing=1; }
done <<EOF
$(grep -E '^CONFIG_[A-Z0-9_]+=' "$fragment")
EOF
[ "$missing" -eq 0 ] || exit 1
echo "[kernel] building bzImage (and vmlinux) with -j$jobs"
start=$(date +%s)
make -s -j"$jobs" bzImage
cp arch/x86/boot/bzImage "$out/bzImage"
cp vmlinux "$out/vmlinux"
cp .config "$out/config"
make -s kernelrelease >"$out/release"
echo "[kernel] done in $(($(date +%s) - start)) s: $out/bzImage, $out/vmlinux ($(cat "$out/release"))"
