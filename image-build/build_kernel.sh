#!/bin/sh
# `make kernel`: a minimal kernel with every driver the guest needs built in,
# from Debian's linux-source (same 6.1 tree as the cloud kernel). Boots
# without an initramfs (root=/dev/vda init=/sbin/cellvm-init) and skips
# module loading. Output: OUT/bzImage (QEMU) and OUT/vmlinux (Firecracker,
# Cloud Hypervisor). Takes 20-60 minutes on 2 cores; not part of `make image`.
set -eu
out="${1:-build/kernel}"
jobs="${JOBS:-2}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$out"

if [ ! -d src ]; then
	pkg="$(apt-cache depends linux-source | sed -n 's/.*Depends: \(linux-source-[0-9.]*\)$/\1/p' | head -1)"
	[ -n "$pkg" ] || { echo "kernel: cannot resolve linux-source (apt-get update?)" >&2; exit 1; }
	echo "[kernel] apt-get download $pkg"
	apt-get download -q "$pkg"
	dpkg-deb -x "$pkg"_*.deb pkg
	echo "[kernel] unpacking the source"
	mkdir src
	tar -C src --strip-components=1 -xaf pkg/usr/src/"$pkg".tar.*
	rm -rf pkg "$pkg"_*.deb
fi

cd src
echo "[kernel] configuring: defconfig + kvm_guest.config + cellvm.config"
make -s defconfig kvm_guest.config
scripts/kconfig/merge_config.sh -m .config "$here/kernel/cellvm.config" >/dev/null
make -s olddefconfig
# Every line of our fragment must have survived olddefconfig (a dependency
# we did not enable silently drops an option).
missing=0
grep -E '^CONFIG_[A-Z0-9_]+=[ym]' "$here/kernel/cellvm.config" | while read -r line; do
	grep -qx "$line" .config || { echo "kernel: $line did not stick" >&2; exit 1; }
done || missing=1
[ "$missing" -eq 0 ] || exit 1
echo "[kernel] building bzImage and vmlinux with -j$jobs"
make -s -j"$jobs" bzImage vmlinux
cp arch/x86/boot/bzImage "$out/bzImage"
cp vmlinux "$out/vmlinux"
cp .config "$out/config"
echo "[kernel] done: $out/bzImage, $out/vmlinux"
