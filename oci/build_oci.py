#!/usr/bin/env python3
"""The pod image (docs/KUBERNETES.md): `make oci` -> build/oci/, an OCI image
layout holding QEMU, the `cellvm` binary and the guest image, whose entrypoint
is `cellvm serve --single`: the server of one sandbox, the pod's.

Two layers, built with Debian's tools:
  base   Debian bookworm (mmdebstrap's "essential" variant) + qemu-system-x86
         without its Recommends + the libraries `cellvm` links (dpkg -S of its
         DT_NEEDED, as the guest image finds the agent's). Cached in
         build/image-cache/pod-base-<key>.tar, keyed by the package list and
         the mirrors; committed once per key into buildah's storage.
  cellvm build/cellvm and the guest files a QEMU launch reads (vmlinuz,
         initramfs.cpio.gz, rootfs.ext4, launch.txt, manifest.json): not the
         uncompressed vmlinux nor rootfs.erofs, which only other VMMs and
         image variants use.

buildah commits the result into build/oci (oci: transport, tag `cellvm`);
skopeo inspects it, as it would copy it to a registry
(skopeo copy oci:build/oci:cellvm docker://REGISTRY/cellvm:TAG).
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "image-build"))
import build_image as bi  # noqa: E402  (mirrors, sonames, dpkg excludes)

# What the pod runs besides cellvm's own binary: QEMU for -M microvm (qboot
# comes in qemu-system-data). The libraries `cellvm` needs are added by soname.
POD_PACKAGES = ["qemu-system-x86"]
# The guest image's files a QEMU launch reads (client/c/vmm.c pick_file,
# launch.txt), and its manifest (the template's key).
GUEST_FILES = ["vmlinuz", "initramfs.cpio.gz", "rootfs.ext4", "launch.txt", "manifest.json"]
IMAGE_DIR = "/usr/local/share/cellvm/image"
TEMPLATE_DIR = "/var/lib/cellvm/templates"
PORT = 3000
BASE_REF = "localhost/cellvm-pod-base"


def progress(msg):
    print(f"[oci] {msg}", flush=True)


def base_tar(cache, packages):
    mirrors = bi.mirror_lines()
    excludes = bi.read_list(os.path.join(ROOT, "image-build", "dpkg-excludes.txt"))
    h = hashlib.sha256("\n".join(packages + mirrors + excludes).encode())
    key = h.hexdigest()[:16]
    tar = os.path.join(cache, f"pod-base-{key}.tar")
    if os.path.exists(tar):
        progress(f"base: cached {os.path.relpath(tar, ROOT)}")
        return tar, key
    for old in os.listdir(cache):
        if old.startswith("pod-base-") and old.endswith(".tar"):
            os.unlink(os.path.join(cache, old))
    args = ["mmdebstrap", "--variant=essential", "--format=tar",
            "--aptopt=APT::Install-Recommends \"false\"",
            "--aptopt=APT::Install-Suggests \"false\"",
            "--include=" + ",".join(packages)]
    args += ["--dpkgopt=" + ln for ln in excludes]
    args += [bi.SUITE, tar + ".part"] + mirrors
    progress(f"base: mmdebstrap {bi.SUITE} with {', '.join(packages)}")
    bi.run(args)
    os.replace(tar + ".part", tar)
    progress(f"base: {os.path.getsize(tar) >> 20} MiB tarball")
    return tar, key


def buildah(*args):
    return subprocess.run(["buildah", *args], check=True, text=True,
                          stdout=subprocess.PIPE).stdout.strip()


def base_image(tar, key):
    """The base layer as an image in buildah's storage, committed once per key."""
    ref = f"{BASE_REF}:{key}"
    if subprocess.run(["buildah", "inspect", "--type", "image", ref], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode == 0:
        return ref
    ctr = buildah("from", "scratch")
    try:
        buildah("add", ctr, tar, "/")
        buildah("commit", "--quiet", ctr, ref)
    finally:
        buildah("rm", ctr)
    return ref


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    cellvm = os.path.join(build, "cellvm")
    image = os.path.join(build, "image")
    for p in [cellvm] + [os.path.join(image, f) for f in GUEST_FILES]:
        if not os.path.exists(p):
            raise SystemExit(f"oci: {p} is missing (make all image)")
    for tool in ("mmdebstrap", "buildah", "skopeo"):
        if not shutil.which(tool):
            raise SystemExit(f"oci: {tool} is missing (apt-get install mmdebstrap buildah skopeo)")
    cache = os.path.join(build, "image-cache")
    os.makedirs(cache, exist_ok=True)
    libs = bi.runtime_packages({"/usr/local/bin/cellvm": cellvm})
    packages = POD_PACKAGES + sorted(set(libs.values()))
    tar, key = base_tar(cache, packages)
    ref = base_image(tar, key)
    ctr = buildah("from", ref)
    try:
        buildah("copy", ctr, cellvm, "/usr/local/bin/cellvm")
        buildah("copy", ctr, *[os.path.join(image, f) for f in GUEST_FILES], IMAGE_DIR + "/")
        with tempfile.TemporaryDirectory() as empty:  # the templates' mount point
            os.chmod(empty, 0o700)
            buildah("copy", ctr, empty, TEMPLATE_DIR)
        entry = ["/usr/local/bin/cellvm", "serve", "--single", "--listen", f"0.0.0.0:{PORT}",
                 "--image", IMAGE_DIR]
        buildah("config", "--entrypoint", json.dumps(entry), "--cmd", "",
                "--port", f"{PORT}/tcp", "--env", f"CELLVM_TEMPLATE_DIR={TEMPLATE_DIR}",
                "--env", "HOME=/root", "--workingdir", "/",
                "--stop-signal", "SIGTERM", "--volume", TEMPLATE_DIR,
                "--label", "org.opencontainers.image.title=cellvm",
                "--label", "org.opencontainers.image.description=cellvm serve --single: "
                "one E2B-compatible sandbox, a QEMU micro-VM restored from its template",
                ctr)
        out = os.path.join(build, "oci")
        shutil.rmtree(out, ignore_errors=True)
        buildah("commit", "--quiet", "--format", "oci", ctr, f"oci:{out}:cellvm")
    finally:
        buildah("rm", ctr)
    info = json.loads(subprocess.run(["skopeo", "inspect", f"oci:{out}:cellvm"], check=True,
                                     text=True, stdout=subprocess.PIPE).stdout)
    progress(f"{os.path.relpath(out, ROOT)}: {len(info['Layers'])} layers, "
             f"digest {info['Digest']}, entrypoint {' '.join(entry)}")


if __name__ == "__main__":
    main()
