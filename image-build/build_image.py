#!/usr/bin/python3
"""Build the cellvm guest image: `make image` -> build/image/, `make image-data` -> build/image-data/.

Profiles (--profile): "default" (build/image: numpy, pandas, matplotlib,
PIL, IPython; under 400 MB) and "data" (build/image-data: the same plus
SciPy, seaborn, scikit-learn, statsmodels and more of E2B's
code-interpreter packages; packages-data.txt, docs/IMAGE.md).

Layers, each rebuilt only when its inputs change (so a changed agent costs a
mkfs.ext4, never an mmdebstrap):

  base      mmdebstrap tarball of Debian bookworm + the data stack, cached as
            build/image-cache/base-<hash>.tar (base-data-<hash>.tar for the
            data profile); the hash covers the profile, its package lists,
            dpkg-excludes.txt, its customize scripts, its stub package and
            the mirrors.
  kernel    linux-image-cloud-amd64 (apt-get download, dpkg-deb -x):
            vmlinuz (bzImage, for QEMU), vmlinux (ELF, for Firecracker and
            Cloud Hypervisor, extracted by extract_vmlinux.py), modules.
  initramfs cellvm-init as /init + the modules of modules.txt with their
            dependencies + modules.dep (depmod).
  rootfs    base + cellvm-agent, cellvm-executor, cellvm-init, and two
            source files of python3-ipykernel (apt-get download, cached as
            build/image-cache/ipykernel-sources/) -> rootfs.ext4 and
            rootfs.erofs (the same tree; each rebuilt only when stale).
  manifest  manifest.json: kernel, modules, sizes, root formats, package
            versions, cmdline.

Needs root (or a user namespace tool) for mmdebstrap and for keeping file
ownership when the base tarball is unpacked for mkfs.ext4.
"""

import argparse
import fcntl
import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from cpio_newc import CpioWriter  # noqa: E402
import extract_vmlinux  # noqa: E402

SUITE = "bookworm"
KERNEL_META = "linux-image-cloud-amd64"
ROOTFS_HEADROOM = 1.04  # ext4 metadata (bitmaps, directories) over the file blocks
ROOTFS_EXTRA_MB = 16
# rootfs.ext4's block size: 1 KiB below this size (what mke2fs.conf's "small"
# type gives anyway), 4 KiB from it on. The size estimate counts the files'
# blocks of the size used: a Python tree is mostly small files, which 4 KiB
# blocks counted ~7 % too large (docs/IMAGE.md, "Everyday tools").
EXT4_SMALL_BLOCKS_BELOW_MB = 512
# rootfs.erofs' compression, chosen by measurement (docs/IMAGE.md, "Formats"):
# lz4 imports as fast as uncompressed at 61 % of the size; lz4hc saves 9 %
# more but makes mkfs.erofs 3.4 times slower.
EROFS_COMPRESSION = "lz4"
EROFS_COMPRESSIONS = ("none", "lz4", "lz4hc")
# The root disk's part of the command line, per format. CMDLINE_BASE has
# ext4's; a launcher boots rootfs.erofs by appending erofs' (the last root=
# and rootfstype= win, in the kernel and in cellvm-init).
CMDLINE_ROOTFS = {"ext4": "root=/dev/vda rootfstype=ext4",
                  "erofs": "root=/dev/vda rootfstype=erofs"}
# The kernel command line, shared by every VMM; vmm_*.py add their own keys.
CMDLINE_BASE = ("console=ttyS0 " + CMDLINE_ROOTFS["ext4"] + " ro panic=-1 quiet "
                "8250.nr_uarts=1 random.trust_cpu=on cryptomgr.notests")
CMDLINE_VMM = {
    "qemu": "reboot=t pci=off",
    # Firecracker exits on the i8042 reset; needs tsc_early_khz only without KVM.
    "firecracker": "reboot=k pci=off",
    "cloud-hypervisor": "reboot=k",
}
# Without KVM (TCG) the kernel's TSC calibration can hang for a long time.
# clearcpuid=erms: TCG runs `rep movsb` a byte an iteration, about 8 times slower
# than `rep movsq`, so the kernel's copies to and from user memory (reads, writes,
# sockets) take the movsq routine instead (bench/egress.py, docs/BENCHMARKS.md).
CMDLINE_TCG = "tsc_early_khz=2000000 clearcpuid=erms"

# Image profiles. "default" is build/image, held to the 400 MB budget; the
# others are opt-in supersets with an output directory of their own. Each
# lists its package lists (mmdebstrap --include, in order), its customize
# hooks (in order) and the control file of its stub package (what it
# Provides is kept out). The default's inputs are exactly those the base
# hash covered before there were profiles, so its cache key is unchanged.
PROFILES = {
    "default": {"out": "image", "packages": ["packages.txt"],
                "customize": ["customize-base.sh"], "stub": "stub-control"},
    # docs/IMAGE.md, "The data profile": what E2B's code-interpreter has that
    # Debian ships at a reasonable size; python3-pythran stubbed out.
    "data": {"out": "image-data", "packages": ["packages.txt", "packages-data.txt"],
             "customize": ["customize-base.sh", "customize-data.sh"],
             "stub": "stub-control-data"},
}
DEFAULT_PROFILE = "default"

# Small guest files shipped next to the binaries (test tooling, see each file).
GUEST_FILES = {
    "/usr/lib/cellvm/agent-selftest": os.path.join(HERE, "guest", "agent-selftest"),
    "/usr/lib/cellvm/vsock_selftest.py": os.path.join(HERE, "guest", "vsock_selftest.py"),
    # A filesystem-only pause's guest side, run by the agent (docs/SNAPSHOTS.md).
    "/usr/lib/cellvm/fs-snapshot": os.path.join(HERE, "guest", "fs-snapshot"),
}
# The JavaScript/TypeScript executor's driver, run by Debian's node (docs/JAVASCRIPT.md).
NODE_EXECUTOR = os.path.join(os.path.dirname(HERE), "node-executor")
GUEST_FILES.update({f"/usr/lib/cellvm/node-executor/{name}": os.path.join(NODE_EXECUTOR, name)
                    for name in ("driver.js", "cbor.js", "frame.js", "output.js", "reseed.js",
                                 "transform.js")})

T0 = time.monotonic()


def progress(stage, msg):
    print(f"[image {time.monotonic() - T0:6.1f}s] {stage}: {msg}", flush=True)


def run(args, **kw):
    return subprocess.run(args, check=True, **kw)


def newer(target, *sources):
    """True when target is missing or older than any source."""
    if not os.path.exists(target):
        return True
    t = os.path.getmtime(target)
    return any(os.path.getmtime(s) > t for s in sources)


def read_list(path):
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]


def atomic_write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# -------------------------------------------------------------------- mirrors
def host_mirrors():
    """The Debian and security mirror URIs this machine's apt is configured with."""
    debian, security = "http://deb.debian.org/debian", "http://deb.debian.org/debian-security"
    texts = []
    for p in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*")):
        try:
            with open(p) as f:
                texts.append(f.read())
        except OSError:
            continue
    uris = re.findall(r"(?:^URIs:\s*|^deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", "\n".join(texts), re.M)
    for u in uris:
        u = u.rstrip("/")
        if u.endswith("/debian-security"):
            security = u
        elif u.endswith("/debian"):
            debian = u
    env_debian = os.environ.get("CELLVM_MIRROR")
    env_security = os.environ.get("CELLVM_SECURITY_MIRROR")
    return env_debian or debian, env_security or security


def mirror_lines():
    debian, security = host_mirrors()
    return [f"deb {debian} {SUITE} main", f"deb {debian} {SUITE}-updates main",
            f"deb {security} {SUITE}-security main"]


# ------------------------------------------------------- binaries' libraries
def needed_sonames(path):
    """The DT_NEEDED shared libraries of an ELF file (none for static ones)."""
    out = subprocess.run(["readelf", "-d", path], check=True, text=True,
                         stdout=subprocess.PIPE).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def runtime_packages(binaries):
    """{soname: Debian package} for what the cellvm binaries link, looked up
    with dpkg -S on this (bookworm) build machine. These packages join the
    base layer, so a new library dependency of the agent rebuilds it."""
    found = {}
    for path in binaries.values():
        for so in needed_sonames(path):
            if so in found:
                continue
            r = subprocess.run(["dpkg", "-S", f"*/{so}"], text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
            pkgs = sorted({ln.split(":")[0] for ln in r.stdout.splitlines()
                           if re.search(r"/lib/(x86_64-linux-gnu/)?" + re.escape(so) + "$", ln)})
            if not pkgs:
                raise SystemExit(f"image: no package provides {so} (needed by {path})")
            found[so] = pkgs[0]
    return found


def check_sonames(tree, sonames):
    dirs = ["usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib", "lib"]
    missing = [so for so in sonames if not any(os.path.exists(os.path.join(tree, d, so)) for d in dirs)]
    if missing:
        raise SystemExit(f"image: the rootfs lacks {', '.join(missing)}")


# ----------------------------------------------------------------------- base
def profile_packages(profile):
    """The packages a profile's lists name, in order, without repeats."""
    names = []
    for listing in PROFILES[profile]["packages"]:
        names += [p for p in read_list(os.path.join(HERE, listing)) if p not in names]
    return names


def _base_prefix(profile):
    return "base-" if profile == DEFAULT_PROFILE else f"base-{profile}-"


def base_tar_name(profile, key):
    return f"{_base_prefix(profile)}{key}.tar"


def is_base_tar_of(profile, name):
    """`name` (a file in the cache) is a base tarball of `profile`, any hash."""
    return re.fullmatch(re.escape(_base_prefix(profile)) + r"[0-9a-f]{16}\.tar(\.part)?", name) is not None


def build_stub_deb(out_dir, profile=DEFAULT_PROFILE):
    """A package that Provides what we keep out on purpose (Tk, jQuery UI;
    pythran in the data profile)."""
    suffix = "" if profile == DEFAULT_PROFILE else "-" + profile
    pkg = os.path.join(out_dir, "stub" + suffix)
    shutil.rmtree(pkg, ignore_errors=True)
    os.makedirs(os.path.join(pkg, "DEBIAN"))
    shutil.copyfile(os.path.join(HERE, PROFILES[profile]["stub"]),
                    os.path.join(pkg, "DEBIAN", "control"))
    deb = os.path.join(out_dir, f"cellvm-guest-stubs{suffix}.deb")
    run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", pkg, deb], stdout=subprocess.DEVNULL)
    shutil.rmtree(pkg)
    return deb


def base_key(mirrors, extra_packages, profile=DEFAULT_PROFILE):
    """The base layer's cache key. The default profile hashes what it always
    has (so existing caches stay valid); any other profile also its name and
    its own files."""
    p = PROFILES[profile]
    h = hashlib.sha256()
    if profile != DEFAULT_PROFILE:
        h.update(b"profile\0" + profile.encode() + b"\0")
    h.update(" ".join(extra_packages).encode() + b"\0")
    files = p["packages"] + ["dpkg-excludes.txt"] + p["customize"] + [p["stub"]]
    for name in files:
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read() + b"\0")
    h.update("\n".join(mirrors).encode())
    return h.hexdigest()[:16]


def build_base(cache, extra_packages, profile=DEFAULT_PROFILE):
    mirrors = mirror_lines()
    key = base_key(mirrors, extra_packages, profile)
    tar = os.path.join(cache, base_tar_name(profile, key))
    if os.path.exists(tar):
        progress("base", f"cached {os.path.relpath(tar, ROOT)}")
        return tar
    for old in os.listdir(cache):  # this profile's stale tarballs, not the others'
        if is_base_tar_of(profile, old):
            os.unlink(os.path.join(cache, old))
    stub = build_stub_deb(cache, profile)
    # apt (outside) and the chrooted dpkg (inside) both open the .deb by the
    # path given to --include: a copy sits at the same path inside the chroot
    # while packages are installed.
    listed = profile_packages(profile)
    packages = listed + [p for p in extra_packages if p not in listed] + [stub]
    args = ["mmdebstrap", "--variant=essential", "--format=tar",
            "--aptopt=APT::Install-Recommends \"false\"",
            "--aptopt=APT::Install-Suggests \"false\"",
            "--include=" + ",".join(packages),
            f"--setup-hook=mkdir -p \"$1{os.path.dirname(stub)}\" && cp {stub} \"$1{stub}\""]
    args += ["--customize-hook=" + os.path.join(HERE, c) for c in PROFILES[profile]["customize"]]
    args += [f"--customize-hook=rm -rf \"$1{stub}\"; rmdir -p \"$1{os.path.dirname(stub)}\" 2>/dev/null || true"]
    args += ["--dpkgopt=" + ln for ln in read_list(os.path.join(HERE, "dpkg-excludes.txt"))]
    args += [SUITE, tar + ".part"] + mirrors
    progress("base", f"mmdebstrap {SUITE}, profile {profile} ({len(packages)} packages, "
             f"mirror {mirrors[0].split()[1]}) - a few minutes")
    run(args)
    os.replace(tar + ".part", tar)
    progress("base", f"done: {os.path.getsize(tar) >> 20} MiB tarball")
    return tar


# --------------------------------------------------------------------- kernel
def kernel_package():
    """Name and version of the image package linux-image-cloud-amd64 points to."""
    out = subprocess.run(["apt-cache", "depends", KERNEL_META], check=True, text=True,
                         stdout=subprocess.PIPE).stdout
    m = re.search(r"Depends:\s*(linux-image-\S+)", out)
    if not m:
        raise SystemExit(f"image: cannot resolve {KERNEL_META} (apt-get update?)")
    return m.group(1)


def build_kernel(cache):
    pkg = os.environ.get("CELLVM_KERNEL_PACKAGE") or kernel_package()
    kdir = os.path.join(cache, pkg)
    done = os.path.join(kdir, ".done")
    if os.path.exists(done):
        progress("kernel", f"cached {pkg}")
    else:
        shutil.rmtree(kdir, ignore_errors=True)
        os.makedirs(kdir)
        progress("kernel", f"apt-get download {pkg}")
        run(["apt-get", "download", "-q", pkg], cwd=kdir, stdout=subprocess.DEVNULL)
        debs = glob.glob(os.path.join(kdir, "*.deb"))
        run(["dpkg-deb", "-x", debs[0], os.path.join(kdir, "root")])
        os.rename(debs[0], os.path.join(kdir, "kernel.deb"))
        kver = os.listdir(os.path.join(kdir, "root", "lib", "modules"))[0]
        progress("kernel", f"depmod {kver}")
        run(["depmod", "-b", os.path.join(kdir, "root"), kver])
        open(done, "w").close()
    root = os.path.join(kdir, "root")
    kver = os.listdir(os.path.join(root, "lib", "modules"))[0]
    deb_version = subprocess.run(["dpkg-deb", "-f", os.path.join(kdir, "kernel.deb"), "Version"],
                                 check=True, text=True, stdout=subprocess.PIPE).stdout.strip()
    return {"package": pkg, "version": deb_version, "release": kver, "root": root,
            "vmlinuz": os.path.join(root, "boot", f"vmlinuz-{kver}"),
            "config": os.path.join(root, "boot", f"config-{kver}")}


# Debian's ipykernel is not in the image (zmq, tornado, jupyter_client), but
# cellvm's kernel stands in for frames of three of its files (raw_input's
# refusal, %less, %edit, the shell's _showtraceback, OutStream.write's
# refusals): their text is shipped,
# and the executor shows their lines as ipykernel's tracebacks do
# (python-embed/kernel/foreign_frames.py).
IPYKERNEL_PACKAGE = "python3-ipykernel"
IPYKERNEL_SOURCES = ("iostream.py", "kernelbase.py", "zmqshell.py")
IPYKERNEL_SOURCE_DIR = "/usr/share/cellvm/ipykernel"


def build_ipykernel_sources(cache):
    """{image path: cached file} of IPYKERNEL_SOURCES, from the package apt
    resolves (downloaded once into the cache)."""
    d = os.path.join(cache, "ipykernel-sources")
    done = os.path.join(d, ".done")
    # A cache made for a shorter IPYKERNEL_SOURCES is made again.
    if not os.path.exists(done) or not all(os.path.exists(os.path.join(d, n)) for n in IPYKERNEL_SOURCES):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        progress("ipykernel", f"apt-get download {IPYKERNEL_PACKAGE} (its source files cellvm's frames show)")
        run(["apt-get", "download", "-q", IPYKERNEL_PACKAGE], cwd=d, stdout=subprocess.DEVNULL)
        (deb,) = glob.glob(os.path.join(d, "*.deb"))
        run(["dpkg-deb", "-x", deb, os.path.join(d, "root")])
        pkgdir = os.path.join(d, "root", "usr", "lib", "python3", "dist-packages", "ipykernel")
        for name in IPYKERNEL_SOURCES:
            os.replace(os.path.join(pkgdir, name), os.path.join(d, name))
        run(["rm", "-rf", "--one-file-system", os.path.join(d, "root"), deb])
        open(done, "w").close()
    return {f"{IPYKERNEL_SOURCE_DIR}/{name}": os.path.join(d, name) for name in IPYKERNEL_SOURCES}


def install_kernel(kernel, out):
    vmlinuz = os.path.join(out, "vmlinuz")
    if newer(vmlinuz, kernel["vmlinuz"]):
        shutil.copyfile(kernel["vmlinuz"], vmlinuz + ".tmp")
        os.replace(vmlinuz + ".tmp", vmlinuz)
    vmlinux = os.path.join(out, "vmlinux")
    if newer(vmlinux, vmlinuz):
        progress("kernel", "extracting vmlinux from the bzImage")
        with open(vmlinuz, "rb") as f:
            atomic_write(vmlinux, extract_vmlinux.extract(f.read()))
    shutil.copyfile(kernel["config"], os.path.join(out, "kernel.config"))


# ------------------------------------------------------------------ initramfs
def module_closure(kernel, names):
    """The .ko paths (relative to lib/modules/VER) of names and their dependencies."""
    mdir = os.path.join(kernel["root"], "lib", "modules", kernel["release"])
    deps, by_name = {}, {}
    with open(os.path.join(mdir, "modules.dep")) as f:
        for line in f:
            path, _, rest = line.partition(":")
            deps[path] = rest.split()
            by_name[os.path.basename(path).split(".ko")[0].replace("-", "_")] = path
    builtin = set()
    with open(os.path.join(mdir, "modules.builtin")) as f:
        for line in f:
            builtin.add(os.path.basename(line.strip()).split(".ko")[0].replace("-", "_"))
    wanted, missing = [], []
    for n in names:
        key = n.replace("-", "_")
        if key in by_name:
            wanted.append(by_name[key])
        elif key not in builtin:
            missing.append(n)
    if missing:
        raise SystemExit(f"image: modules not in {kernel['release']}: {', '.join(missing)}")
    closure, stack = set(), list(wanted)
    while stack:
        p = stack.pop()
        if p not in closure:
            closure.add(p)
            stack.extend(deps[p])
    return sorted(closure), mdir


def build_initramfs(kernel, init_bin, out, staging):
    target = os.path.join(out, "initramfs.cpio.gz")
    mods_file = os.path.join(HERE, "modules.txt")
    names = read_list(mods_file)
    paths, mdir = module_closure(kernel, names)
    if not newer(target, init_bin, mods_file, kernel["vmlinuz"], __file__,
                 os.path.join(HERE, "cpio_newc.py")):
        progress("initramfs", "up to date")
        return names, paths
    progress("initramfs", f"cellvm-init + {len(paths)} modules")
    # depmod over just the shipped modules, so modules.dep lists only them.
    tree = os.path.join(staging, "initramfs")
    shutil.rmtree(tree, ignore_errors=True)
    kmods = os.path.join(tree, "lib", "modules", kernel["release"])
    for p in paths:
        os.makedirs(os.path.dirname(os.path.join(kmods, p)), exist_ok=True)
        shutil.copyfile(os.path.join(mdir, p), os.path.join(kmods, p))
    for f in ("modules.builtin", "modules.builtin.modinfo", "modules.order"):
        shutil.copyfile(os.path.join(mdir, f), os.path.join(kmods, f))
    run(["depmod", "-b", tree, kernel["release"]])
    for f in os.listdir(kmods):  # keep what init reads: modules.dep, modules.builtin
        if f.startswith("modules.") and f not in ("modules.dep", "modules.builtin"):
            os.unlink(os.path.join(kmods, f))
    with open(init_bin, "rb") as f:
        init_data = f.read()
    modules_conf = "".join(n + "\n" for n in names).encode()
    tmp = target + ".tmp"
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                               compresslevel=6) as gz:
        w = CpioWriter(gz)
        for d in ("dev", "proc", "sys", "run", "tmp", "etc", "etc/cellvm", "lib", "lib/modules"):
            w.directory(d)
        w.char_device("dev/console", 5, 1)
        w.char_device("dev/null", 1, 3, 0o666)
        w.file("init", init_data, 0o755)
        w.file("etc/cellvm/modules", modules_conf)
        w.directory(f"lib/modules/{kernel['release']}")
        w.tree(kmods, f"lib/modules/{kernel['release']}")
        w.close()
    os.replace(tmp, target)
    shutil.rmtree(tree)
    progress("initramfs", f"done: {os.path.getsize(target) >> 10} KiB")
    return names, paths


# --------------------------------------------------------------------- rootfs
def dpkg_versions(root):
    versions, pkg = {}, None
    with open(os.path.join(root, "var", "lib", "dpkg", "status")) as f:
        for line in f:
            if line.startswith("Package: "):
                pkg = line.split()[1]
            elif line.startswith("Version: ") and pkg:
                versions[pkg] = line.split()[1]
    return dict(sorted(versions.items()))


def tree_size(root, blocks=(1024, 4096)):
    """({block size: bytes in blocks of that size}, number of inodes, newest
    mtime) of a directory tree."""
    total, inodes, newest = dict.fromkeys(blocks, 0), 0, 0
    for dirpath, dirs, files in os.walk(root):
        inodes += 1 + len(files)
        for b in blocks:
            total[b] += b
        for fn in files:
            st = os.lstat(os.path.join(dirpath, fn))
            newest = max(newest, int(st.st_mtime))
            if stat.S_ISLNK(st.st_mode) and st.st_size < 60:
                continue  # a fast symlink: its target lives in the inode
            for b in blocks:
                total[b] += (st.st_size + b - 1) // b * b
    return total, inodes, newest


def ext4_geometry(sizes):
    """(block size, image MiB) of rootfs.ext4 for tree_size()'s sizes: 1 KiB
    blocks while the image stays under EXT4_SMALL_BLOCKS_BELOW_MB, else 4 KiB."""
    for block in (1024, 4096):
        mb = int(sizes[block] * ROOTFS_HEADROOM / (1 << 20)) + ROOTFS_EXTRA_MB
        if block == 4096 or mb < EXT4_SMALL_BLOCKS_BELOW_MB:
            return block, mb


def erofs_args(compression):
    """mkfs.erofs' options (besides the build time: see mkfs_erofs)."""
    args = ["mkfs.erofs", "--quiet", "-U", "00000000-0000-0000-0000-000000000000"]
    return args + ([] if compression == "none" else ["-z" + compression])


def mkfs_ext4(tree, tmp, mb, inodes, block):
    env = dict(os.environ, E2FSPROGS_FAKE_TIME="1700000000")
    # Read-only at runtime: no journal, no reserved blocks, no lazy init.
    return subprocess.Popen(
        ["mkfs.ext4", "-q", "-F", "-L", "cellvm-root", "-U", "clear", "-m", "0", "-b", str(block),
         "-N", str(inodes + inodes // 8 + 1024), "-O", "^has_journal",
         "-E", "lazy_itable_init=0,lazy_journal_init=0,root_owner=0:0",
         "-d", tree, tmp, f"{mb}M"], env=env)


def mkfs_erofs(tree, tmp, args, newest):
    # Files keep their mtimes (Python checks each .pyc against its source's):
    # neither -T nor an older SOURCE_DATE_EPOCH, which set or clamp them. The
    # build time (in the superblock) is the newest mtime, so equal inputs give
    # an equal image.
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(newest))
    return subprocess.Popen(args + [tmp, tree], env=env)


def build_rootfs(base_tar, binaries, sonames, out, staging, compression, texts):
    """rootfs.ext4 and rootfs.erofs from one unpacked tree; each is rebuilt
    only when its inputs (or, for erofs, mkfs options) changed. texts:
    {image path: file} of files shipped read-only (0644)."""
    versions_file = os.path.join(out, ".packages.json")
    args_file = os.path.join(out, ".rootfs.erofs.args")
    sources = [base_tar, __file__] + list(binaries.values()) + list(GUEST_FILES.values()) + list(texts.values())
    args = erofs_args(compression)
    try:
        with open(args_file) as f:
            old_args = json.load(f)
    except (OSError, ValueError):
        old_args = None
    stale = {"ext4": newer(os.path.join(out, "rootfs.ext4"), *sources)
             or not os.path.exists(versions_file),
             "erofs": newer(os.path.join(out, "rootfs.erofs"), *sources) or old_args != args}
    if not any(stale.values()):
        progress("rootfs", "up to date")
        with open(versions_file) as f:
            return json.load(f)
    tree = os.path.join(staging, "rootfs")
    if os.path.exists(tree):
        run(["rm", "-rf", "--one-file-system", tree])
    os.makedirs(tree)
    progress("rootfs", f"unpacking {os.path.basename(base_tar)}")
    run(["tar", "-C", tree, "--numeric-owner", "-xpf", base_tar])
    for dest, src in list(binaries.items()) + list(GUEST_FILES.items()) + list(texts.items()):
        path = os.path.join(tree, dest.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copyfile(src, path)
        os.chmod(path, 0o644 if dest in texts else 0o755)
    os.makedirs(os.path.join(tree, "etc", "cellvm"), exist_ok=True)
    for d in (".cellvm-lower", ".cellvm-rw"):  # init's overlay mount points
        os.makedirs(os.path.join(tree, d), exist_ok=True)
    check_sonames(tree, sonames)
    versions = dpkg_versions(tree)
    sizes, inodes, newest = tree_size(tree)
    block, mb = ext4_geometry(sizes)
    # Both mkfs run at once (two cores): erofs adds little to the build's time.
    jobs = []
    for fs in ("ext4", "erofs"):
        if not stale[fs]:
            progress("rootfs", f"rootfs.{fs} up to date")
            continue
        target = os.path.join(out, f"rootfs.{fs}")
        tmp = target + ".tmp"
        if os.path.exists(tmp):
            os.unlink(tmp)
        if fs == "ext4":
            proc = mkfs_ext4(tree, tmp, mb, inodes, block)
            what = f"{mb} MiB image, {block >> 10} KiB blocks"
        else:
            proc = mkfs_erofs(tree, tmp, args, newest)
            what = "uncompressed" if compression == "none" else compression
        progress("rootfs", f"mkfs.{fs} ({sizes[block] >> 20} MiB of files, {what})")
        jobs.append((fs, proc, tmp, target))
    failed = []
    for fs, proc, tmp, target in jobs:
        if proc.wait() != 0:
            failed.append(f"mkfs.{fs}")
            continue
        os.replace(tmp, target)
        progress("rootfs", f"rootfs.{fs} done: {os.path.getsize(target) >> 20} MiB")
    if failed:
        raise SystemExit(f"image: {' and '.join(failed)} failed")
    run(["rm", "-rf", "--one-file-system", tree])
    atomic_write(versions_file, json.dumps(versions).encode())
    atomic_write(args_file, json.dumps(args).encode())
    return versions


# ------------------------------------------------------------------- manifest
def write_manifest(out, kernel, modules, module_paths, versions, base_tar, compression,
                   profile=DEFAULT_PROFILE):
    files = {}
    for name in ("vmlinuz", "vmlinux", "initramfs.cpio.gz", "rootfs.ext4", "rootfs.erofs"):
        files[name] = {"size": os.path.getsize(os.path.join(out, name))}
    wanted = profile_packages(profile)
    manifest = {
        "format": 1,
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "profile": profile,
        "kernel": {"package": kernel["package"], "version": kernel["version"],
                   "release": kernel["release"]},
        "modules": {"load": modules,
                    "files": [os.path.basename(p).split(".ko")[0] for p in module_paths]},
        "files": files,
        # type/device: the default disk, rootfs.ext4, which cmdline.base names.
        # formats: every disk; a launcher appends its cmdline to cmdline.base.
        "rootfs": {"type": "ext4", "device": "/dev/vda", "read_only": True,
                   "base": os.path.basename(base_tar),
                   "formats": {
                       "ext4": {"file": "rootfs.ext4", "size": files["rootfs.ext4"]["size"],
                                "cmdline": CMDLINE_ROOTFS["ext4"]},
                       "erofs": {"file": "rootfs.erofs", "size": files["rootfs.erofs"]["size"],
                                 "compression": compression,
                                 "cmdline": CMDLINE_ROOTFS["erofs"]}}},
        "cmdline": {"base": CMDLINE_BASE, "vmm": CMDLINE_VMM, "tcg": CMDLINE_TCG},
        "agent": {"vsock_port": 1024, "serial_port": "cellvm", "workdir": "/home/user"},
        "packages": {"requested": {p: versions.get(p) for p in wanted}, "all": versions},
    }
    atomic_write(os.path.join(out, "manifest.json"),
                 (json.dumps(manifest, indent=2) + "\n").encode())
    write_launch_txt(out, manifest)


def write_launch_txt(out, manifest):
    """launch.txt: what a launcher needs from the manifest as KEY=VALUE lines
    (the C CLI reads it: client/c/vmm.c; no JSON parser there). Values run to
    the end of the line."""
    c, agent = manifest["cmdline"], manifest["agent"]
    lines = ["# cellvm launch parameters (generated from manifest.json)",
             f"cmdline_base={c['base']}", f"cmdline_tcg={c['tcg']}"]
    lines += [f"cmdline_vmm_{vmm.replace('-', '_')}={v}" for vmm, v in sorted(c["vmm"].items())]
    lines += [f"vsock_port={agent['vsock_port']}", f"serial_port={agent['serial_port']}"]
    atomic_write(os.path.join(out, "launch.txt"), ("\n".join(lines) + "\n").encode())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="directory holding cellvm-agent, cellvm-executor, cellvm-init.stripped")
    ap.add_argument("--profile", choices=sorted(PROFILES), default=DEFAULT_PROFILE,
                    help="what the root filesystem holds: 'default' (numpy, pandas, matplotlib, "
                         "PIL, IPython; under 400 MB) or 'data' (that plus SciPy, seaborn, "
                         "scikit-learn, statsmodels, scikit-image, plotly, openpyxl, requests, "
                         "...; packages-data.txt). Default: %(default)s")
    ap.add_argument("--out", help="output directory (default BUILD/image, "
                                  "BUILD/image-PROFILE for another profile)")
    ap.add_argument("--cache", help="layer cache (default BUILD/image-cache)")
    ap.add_argument("--erofs-compression", choices=EROFS_COMPRESSIONS, default=EROFS_COMPRESSION,
                    help=f"rootfs.erofs' compression (default {EROFS_COMPRESSION})")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out or os.path.join(build, PROFILES[args.profile]["out"]))
    cache = os.path.abspath(args.cache or os.path.join(build, "image-cache"))
    os.makedirs(out, exist_ok=True)
    os.makedirs(cache, exist_ok=True)
    binaries = {"/usr/bin/cellvm-agent": os.path.join(build, "cellvm-agent"),
                "/usr/bin/cellvm-executor": os.path.join(build, "cellvm-executor"),
                "/sbin/cellvm-init": os.path.join(build, "cellvm-init.stripped")}
    for path in binaries.values():
        if not os.path.exists(path):
            raise SystemExit(f"image: {path} is missing (run make first)")
    for tool, pkg in (("mkfs.ext4", "e2fsprogs"), ("mkfs.erofs", "erofs-utils")):
        if shutil.which(tool) is None:
            raise SystemExit(f"image: {tool} not found: install {pkg} (`make deps`)")
    # One build at a time per cache (test sessions may start `make image` together).
    lock = open(os.path.join(cache, ".lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    # Unpacked trees live outside build/: the top Makefile includes every
    # build/**/*.d, and a root filesystem has /etc/*.d directories.
    with tempfile.TemporaryDirectory(prefix="cellvm-image-") as staging:
        kernel = build_kernel(cache)
        install_kernel(kernel, out)
        modules, module_paths = build_initramfs(kernel, binaries["/sbin/cellvm-init"], out, staging)
        libs = runtime_packages(binaries)
        progress("base", "the binaries link " + ", ".join(f"{so} ({p})" for so, p in libs.items()))
        base_tar = build_base(cache, sorted(set(libs.values())), args.profile)
        texts = build_ipykernel_sources(cache)
        versions = build_rootfs(base_tar, binaries, list(libs), out, staging,
                                args.erofs_compression, texts)
        write_manifest(out, kernel, modules, module_paths, versions, base_tar,
                       args.erofs_compression, args.profile)
    lock.close()
    progress("image", f"ready in {os.path.relpath(out, ROOT)}")


if __name__ == "__main__":
    main()
