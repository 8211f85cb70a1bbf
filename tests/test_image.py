"""The guest image's artefacts (build/image): manifest, size budget, what is
kept out (packages and paths, read from rootfs.ext4 with debugfs), initramfs
contents, the vmlinux a PVH-booting VMM loads, rootfs.erofs against
rootfs.ext4, incremental rebuilds; and one boot of rootfs.erofs under QEMU.
"""

import gzip
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "image-build"))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

import extract_vmlinux  # noqa: E402
from cellvm import Sandbox  # noqa: E402
import created_vm  # noqa: E402
from conftest import (FIRST_RUN_TIMEOUT, IMAGE, IMAGE_BUILD,  # noqa: E402
                      build_image_or_skip)

BUILD = IMAGE_BUILD  # the image's build dir (make's B): its binaries and layer cache
# "under 400 MB uncompressed" (issue 6), raised to 480 MB for Node.js and
# TypeScript's transpiler (issue 14; docs/IMAGE.md).
ROOTFS_BUDGET = 480 * 1000 * 1000
EXT4 = os.path.join(IMAGE, "rootfs.ext4")
EROFS = os.path.join(IMAGE, "rootfs.erofs")
XEN_ELFNOTE_PHYS32_ENTRY = 18  # the PVH entry point (xen/interface/elfnote.h)


@pytest.fixture(scope="module")
def image():
    build_image_or_skip()
    with open(os.path.join(IMAGE, "manifest.json")) as f:
        return json.load(f)


def read_cpio(path):
    """{name: (mode, data)} of a gzip'd newc archive."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    entries, pos = {}, 0
    while True:
        assert data[pos:pos + 6] == b"070701", f"bad cpio magic at {pos}"
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        pos = (pos + 110 + namesize + 3) & ~3
        if name == "TRAILER!!!":
            return entries
        entries[name] = (mode, data[pos:pos + size])
        pos = (pos + size + 3) & ~3


# ------------------------------------------------ reading the two filesystems
def ext4_ls_many(paths):
    """{path: {name: (mode, uid, gid, size)} without . and .., or None where
    the directory does not exist} of rootfs.ext4: one debugfs run, no mount."""
    with tempfile.NamedTemporaryFile("w", suffix=".debugfs") as cmds:
        cmds.write("".join(f"ls -p {p}\n" for p in paths))
        cmds.flush()
        out = subprocess.run(["debugfs", "-f", cmds.name, EXT4], text=True, check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    result, entries = {}, None
    for line in out.splitlines():
        if line.startswith("debugfs: ls -p "):
            entries = result[line[len("debugfs: ls -p "):]] = {}
            continue
        f = line.split("/")  # /inode/mode/uid/gid/name/size/
        if len(f) == 8:
            entries[f[5]] = (int(f[2], 8), int(f[3]), int(f[4]), int(f[6] or 0))
    assert list(result) == list(paths), out[-2000:]
    return {p: ({n: e for n, e in es.items() if n not in (".", "..")} if "." in es else None)
            for p, es in result.items()}


def ext4_ls(path):
    return ext4_ls_many([path])[path]


def ext4_walk(top):
    """{path: (mode, uid, gid, size)} of everything below top in rootfs.ext4."""
    found, level = {}, [top]
    while level:
        listed = ext4_ls_many(level)
        level = []
        for d, entries in listed.items():
            for name, e in (entries or {}).items():
                found[f"{d}/{name}"] = e
                if e[0] & 0o170000 == 0o040000:
                    level.append(f"{d}/{name}")
    return found


def ext4_mtime(path):
    out = subprocess.run(["debugfs", "-R", f"stat {path}", EXT4], text=True, check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    return int(re.search(r"^ mtime: 0x([0-9a-f]+)", out, re.M).group(1), 16)


def erofs_stat(path):
    """{type, mode, uid, gid, size, mtime} of a path of rootfs.erofs from
    dump.erofs (mtime as `YYYY-MM-DD HH:MM:SS`, UTC). dump.erofs shows only the
    0777 bits: the whole i_mode is read from the inode (offset 4 in both
    inode layouts; nid * 32 bytes from the metadata block)."""
    out = subprocess.run(["dump.erofs", f"--path={path}", EROFS], text=True, check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout
    m = re.search(r"Size: (\d+) .*? (regular file|directory|symlink file|.+)\nNID: (\d+).*"
                  r"Uid: (\d+)\s+Gid: (\d+)\s+Access: (\d+)/.*\nTimestamp: (\S+ \S+?)\.", out, re.S)
    assert m, f"dump.erofs --path={path}: {out}"
    with open(EROFS, "rb") as f:
        f.seek(1024 + 0x28)  # the superblock's meta_blkaddr
        meta, = struct.unpack("<I", f.read(4))
        f.seek(meta * 4096 + int(m.group(3)) * 32 + 4)
        mode, = struct.unpack("<H", f.read(2))
    assert mode & 0o777 == int(m.group(6), 8), (path, oct(mode), out)
    return {"size": int(m.group(1)), "type": m.group(2), "uid": int(m.group(4)),
            "gid": int(m.group(5)), "mode": mode, "mtime": m.group(7)}


def erofs_ls(path):
    out = subprocess.run(["dump.erofs", "--ls", f"--path={path}", EROFS], text=True, check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout
    names = re.findall(r"^\s+\d+\s+\d+\s+(\S.*)$", out, re.M)
    assert "." in names, f"dump.erofs --ls {path}: {out}"
    return {n for n in names if n not in (".", "..")}


# ------------------------------------------------------------------- manifest
def test_manifest(image):
    k = image["kernel"]
    assert k["package"] == f"linux-image-{k['release']}" and k["release"].endswith("-cloud-amd64")
    assert re.fullmatch(r"\d+\.\d+\.\d+-\d+(\+\S+)?", k["version"]), k["version"]
    for name in ("vmlinuz", "vmlinux", "initramfs.cpio.gz", "rootfs.ext4", "rootfs.erofs"):
        assert image["files"][name]["size"] == os.path.getsize(os.path.join(IMAGE, name)), name
    for fs, fmt in image["rootfs"]["formats"].items():
        assert fmt["size"] == os.path.getsize(os.path.join(IMAGE, fmt["file"])), fs
    for pkg in ("python3", "python3-numpy", "python3-pandas", "python3-matplotlib", "python3-pil",
                "libcbor0.8", "libpng16-16"):
        assert image["packages"]["requested"][pkg], pkg
        assert image["packages"]["all"][pkg] == image["packages"]["requested"][pkg], pkg
    # The executor has libpython linked in; nothing else needs the shared one.
    assert "libpython3.11" not in image["packages"]["all"]
    cmd = image["cmdline"]
    assert "root=/dev/vda" in cmd["base"] and "console=ttyS0" in cmd["base"]
    assert image["rootfs"]["formats"]["ext4"]["cmdline"] in cmd["base"]
    assert image["rootfs"]["formats"]["erofs"]["cmdline"] == "root=/dev/vda rootfstype=erofs"
    assert cmd["tcg"] == "tsc_early_khz=2000000 clearcpuid=erms"
    assert set(cmd["vmm"]) == {"qemu", "firecracker", "cloud-hypervisor"}
    with open(os.path.join(ROOT, "image-build", "modules.txt")) as f:
        listed = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    assert image["modules"]["load"] == listed
    for m in ("virtio_mmio", "virtio_blk", "overlay", "erofs"):  # both root formats need these
        assert m in listed, m


def test_manifest_agent_port_is_the_one_init_and_the_launchers_use(image):
    with open(os.path.join(ROOT, "init", "config.c")) as f:
        init_port = int(re.search(r"#define DEFAULT_VSOCK_PORT (\d+)", f.read()).group(1))
    with open(os.path.join(IMAGE, "launch.txt")) as f:
        launch = dict(ln.rstrip("\n").split("=", 1) for ln in f if "=" in ln and not ln.startswith("#"))
    with open(os.path.join(ROOT, "client", "c", "vmm_vsock.h")) as f:
        cli_port = int(re.search(r"#define CVM_AGENT_VSOCK_PORT (\d+)", f.read()).group(1))
    assert image["agent"]["vsock_port"] == init_port == cli_port == int(launch["vsock_port"])
    assert launch["cmdline_base"] == image["cmdline"]["base"]


# ----------------------------------------------------- what is kept out of it
def is_build_tool(pkg):
    """A compiler, its parts, headers or libraries only compilers use."""
    return bool(re.fullmatch(r"(gcc|g\+\+|cpp|c\+\+|gfortran)(-\d+)?", pkg)
                or pkg.endswith("-dev")
                or re.search(r"boost|(^|-|lib)(llvm|clang)|binutils|pythran", pkg)
                or re.fullmatch(r"lib(asan|tsan|ubsan|lsan|hwasan|itm|cc1-)\d+", pkg))


def test_the_build_tool_check_catches_versioned_names():
    for bad in ("gcc", "gcc-12", "cpp-12", "g++-12", "libgcc-12-dev", "libstdc++-12-dev",
                "python3-dev", "libpython3.11-dev", "libc6-dev", "linux-libc-dev",
                "libboost1.74-dev", "libboost-python1.74.0", "llvm-14", "libllvm15", "clang-14",
                "libclang-cpp14", "binutils-x86-64-linux-gnu", "libasan8", "python3-pythran"):
        assert is_build_tool(bad), bad
    for ok in ("gcc-12-base", "libgcc-s1", "libstdc++6", "libgfortran5", "libudev1",
               "libdevmapper1.02.1", "python3-numpy", "libpython3.11", "cellvm-guest-stubs"):
        assert not is_build_tool(ok), ok


def test_rootfs_is_under_budget_and_keeps_compilers_out(image):
    assert os.path.getsize(EXT4) < ROOTFS_BUDGET
    everything = image["packages"]["all"]
    assert len(everything) > 100  # the real list, not an empty one
    assert [p for p in everything if is_build_tool(p)] == []
    for unwanted in ("python3-scipy", "perl", "python3-tk", "usrmerge"):
        assert unwanted not in everything, unwanted
    # the files themselves, whatever dpkg's database says
    usr_bin = ext4_ls("/usr/bin")
    assert "python3" in usr_bin and "cellvm-agent" in usr_bin
    tools = [n for n in usr_bin if re.fullmatch(r"(gcc|g\+\+|cc|c\+\+|cpp|as|ld|clang|llvm-\S+)(-\d+)?", n)
             or n.startswith("x86_64-linux-gnu-")]
    assert tools == []
    assert ext4_ls("/usr/lib/gcc") in (None, {})  # cc1, crt*.o, libgcc.a live there


# git's programs kept out (dpkg-excludes.txt): 2 MB each, servers and rare tools
# (git-daemon stays: a loopback daemon to push to).
GIT_LEFT_OUT = ("scalar", "git-shell", "git-http-backend", "git-imap-send",
                "git-http-fetch", "git-http-push", "git-instaweb")


def test_rootfs_has_the_everyday_tools_and_git_without_perl(image):
    """procps, curl, git, which (debianutils) and pip (docs/IMAGE.md,
    "Everyday tools"); git's perl dependency is the stub's; its second copy of
    the git binary is a symlink; pip's "externally managed" marker is gone; the
    user site and ~/.local/bin exist for the sandbox user."""
    everything = image["packages"]["all"]
    for pkg in ("procps", "curl", "git", "python3-pip", "debianutils", "ca-certificates"):
        assert pkg in everything, pkg
    for pkg in ("perl", "perl-modules-5.36", "libperl5.36", "liberror-perl"):
        assert pkg not in everything, pkg
    found = ext4_ls_many(["/usr/bin", "/usr/lib/git-core", "/usr/lib/python3.11",
                          "/home/user", "/home/user/.local", "/home/user/.local/lib/python3.11",
                          "/usr/lib/python3/dist-packages/pip"])
    usr_bin = found["/usr/bin"]
    for tool in ("ps", "top", "free", "pgrep", "kill", "curl", "git", "which", "pip", "pip3",
                 "perl"):  # perl: perl-base's, essential
        assert tool in usr_bin, tool
    core = found["/usr/lib/git-core"]
    assert core["git"][0] & 0o170000 == 0o120000 and core["git"][3] == len("../../bin/git")
    assert "git-remote-http" in core and "git-sh-i18n--envsubst" in core and "git-daemon" in core
    for name in GIT_LEFT_OUT:
        assert name not in core and name not in usr_bin, name
    assert "EXTERNALLY-MANAGED" not in found["/usr/lib/python3.11"]
    assert found["/usr/lib/python3/dist-packages/pip"]
    home = found["/home/user"]
    assert {".profile", ".bashrc", ".local"} <= set(home)
    for path, entries, name in (("/home/user/.local", found["/home/user/.local"], "bin"),
                                ("/home/user/.local/lib/python3.11",
                                 found["/home/user/.local/lib/python3.11"], "site-packages")):
        mode, uid, gid, _ = entries[name]
        assert mode & 0o170000 == 0o040000 and (uid, gid) == (1000, 1000), (path, name)


def test_everyday_tools_run_in_the_guest(image, vm_sandbox):
    """ps aux, curl, git (a repository made, committed to and logged), which
    and pip, as the sandbox user in the session's VM."""
    def sh(cmd):
        r = vm_sandbox.commands.run(cmd, timeout=120)
        assert r.exit_code == 0, (cmd, r.stdout, r.stderr)
        return r.stdout

    ps = sh("ps aux").splitlines()
    assert ps[0].split()[:3] == ["USER", "PID", "%CPU"], ps[:3]
    assert any("cellvm-agent" in ln for ln in ps) and any(ln.split()[1] == "1" for ln in ps[1:])
    assert sh("curl --version").startswith("curl 7.88")
    assert sh("curl -sS file:///etc/os-release").startswith('PRETTY_NAME="Debian GNU/Linux 12')
    assert sh("git --version").startswith("git version 2.")
    log = sh("d=$(mktemp -d) && cd $d && git init -q && echo hello > a.txt && git add a.txt && "
             "git -c user.name=u -c user.email=u@example.com commit -q -m first && "
             "git log --format='%s %an' && git status --porcelain && git show --stat --format= HEAD")
    assert log.splitlines()[0] == "first u" and "a.txt | 1 +" in log, log
    # Pushed over git:// to a daemon on loopback, as E2B's git tests do, and cloned back.
    pushed = sh("d=$(mktemp -d) && cd $d && git init -q --bare -b main r.git && "
                "(git daemon --reuseaddr --base-path=$d --export-all --enable=receive-pack "
                "--listen=127.0.0.1 --port=9555 & echo $! > pid) && sleep 1 && "
                "git init -q -b main w && cd w && echo x > x && git add x && "
                "git -c user.name=u -c user.email=u@example.com commit -q -m pushed && "
                "git push -q git://127.0.0.1:9555/r.git main && "
                "git clone -q git://127.0.0.1:9555/r.git ../c && git -C ../c log --format=%s; "
                "rc=$?; kill $(cat $d/pid); exit $rc")
    assert pushed.strip() == "pushed", pushed
    assert sh("which python3 python ps curl git pip").split() == [
        "/usr/bin/python3", "/usr/bin/python", "/usr/bin/ps", "/usr/bin/curl", "/usr/bin/git",
        "/usr/bin/pip"]
    assert sh("python -c 'import sys; print(sys.version_info[:2])'").strip() == "(3, 11)"
    assert sh("pip --version").startswith("pip 23.0.1 from /usr/lib/python3/dist-packages/pip "
                                          "(python 3.11)")


def test_notebook_extras_work_in_the_guest(image, vm_sandbox):
    """Jinja2 (pandas' DataFrame.style), nest_asyncio (asyncio.run in a
    cell), tqdm and requests, which E2B's Jupyter-based sandbox has
    (image-build/packages.txt), and %%bash --bg scripts running `python`."""
    everything = image["packages"]["all"]
    assert {"python3-jinja2", "python3-nest-asyncio", "python3-tqdm",
            "python3-requests"} <= set(everything)
    ctx = vm_sandbox.create_code_context()
    try:
        ex = vm_sandbox.run_code("import pandas as pd\n"
                                 "df = pd.DataFrame({'a': [1, 3], 'b': [4, 2]})\n"
                                 "df.style.highlight_max(color='yellow')", context=ctx, timeout=120)
        assert ex.error is None, ex.error
        assert "background-color: yellow" in ex.results[0].html, ex.results
        ex = vm_sandbox.run_code("print(df.style.to_latex())", context=ctx, timeout=60)
        assert ex.error is None and ex.logs.stdout[0].startswith("\\begin{tabular}"), ex
        ex = vm_sandbox.run_code("import asyncio\nasync def f():\n    await asyncio.sleep(0)\n"
                                 "    return 42\nasyncio.run(f())", context=ctx, timeout=60)
        assert ex.error.name == "RuntimeError", ex  # a running loop, as in ipykernel
        ex = vm_sandbox.run_code("import nest_asyncio\nnest_asyncio.apply()\nasyncio.run(f())",
                                 context=ctx, timeout=60)
        assert ex.error is None and ex.text == "42", ex
        # %%script --bg's loop thread and asyncio's child watcher under the
        # executor's confinement; %%python needs `python` (python-is-python3).
        ex = vm_sandbox.run_code("%%bash --bg --out bg_out --proc bg_proc\npython -c 'print(6 * 7)'",
                                 context=ctx, timeout=60)
        assert ex.error is None and not ex.logs.stdout, ex
        ex = vm_sandbox.run_code("await bg_proc.wait(), (await bg_out.read()).decode()", context=ctx,
                                 timeout=60)
        assert ex.error is None and ex.text == "(0, '42\\n')", ex
        # tqdm's bar on stderr; requests to a server on the guest's loopback.
        ex = vm_sandbox.run_code("from tqdm import tqdm\nfor _ in tqdm(range(2), mininterval=0, "
                                 "bar_format='{n_fmt}/{total_fmt}'):\n    pass", context=ctx, timeout=60)
        assert ex.error is None and "".join(ex.logs.stderr) == "\r0/2\r1/2\r2/2\r2/2\n", ex
        ex = vm_sandbox.run_code("%%bash --bg --proc srv\n"
                                 "exec python -m http.server 8765 --bind 127.0.0.1 --directory /etc",
                                 context=ctx, timeout=60)
        assert ex.error is None, ex
        ex = vm_sandbox.run_code("import requests, time\nfor _ in range(300):\n    try:\n"
                                 "        r = requests.get('http://127.0.0.1:8765/', timeout=10)\n"
                                 "        break\n    except requests.ConnectionError:\n"
                                 "        time.sleep(0.1)\nr.status_code, 'os-release' in r.text",
                                 context=ctx, timeout=120)
        assert ex.error is None and ex.text == "(200, True)", ex
        # http.server ends on SIGINT (KeyboardInterrupt) with status 0.
        ex = vm_sandbox.run_code("%killbgscripts\nawait srv.wait()", context=ctx, timeout=60)
        assert ex.error is None and ex.text == "0", ex
    finally:
        vm_sandbox.remove_code_context(ctx)


def test_rootfs_has_node_and_the_javascript_driver(image):
    """Debian's node, cellvm's driver, acorn, and of TypeScript only lib/typescript.js."""
    found = ext4_ls_many(["/usr/bin", "/usr/lib/cellvm/node-executor",
                          "/usr/share/nodejs/typescript/lib", "/usr/share/nodejs/acorn/dist",
                          "/usr/share/nodejs/typescript/loc"])
    assert "node" in found["/usr/bin"]
    assert {"driver.js", "cbor.js", "frame.js", "output.js", "reseed.js", "transform.js"} <= set(
        found["/usr/lib/cellvm/node-executor"])
    assert set(found["/usr/share/nodejs/typescript/lib"]) == {"typescript.js"}
    assert "acorn.js" in found["/usr/share/nodejs/acorn/dist"]
    assert not found["/usr/share/nodejs/typescript/loc"]
    assert {"nodejs", "node-acorn", "node-typescript"} <= set(image["packages"]["all"])


@pytest.mark.parametrize("path", ["/usr/share/man", "/usr/share/locale", "/usr/include",
                                  "/usr/lib/python3.11/dist-packages"])
def test_rootfs_has_no_manuals_locales_or_headers(image, path):
    entries = ext4_ls(path)
    assert not entries, f"{path}: {sorted(entries)[:20]}"


def test_rootfs_docs_are_only_copyright_files(image):
    """dpkg's path filters leave each package's copyright (and the odd now
    dangling symlink or empty directory), no documentation."""
    docs = ext4_walk("/usr/share/doc")
    assert len(docs) > 100
    files = {p: e for p, e in docs.items() if e[0] & 0o170000 == 0o100000}
    assert files and all(p.endswith("/copyright") for p in files), \
        sorted(p for p in files if not p.endswith("/copyright"))[:20]


# ------------------------------------------------------------------ initramfs
def test_initramfs_has_init_modules_and_moddep(image):
    entries = read_cpio(os.path.join(IMAGE, "initramfs.cpio.gz"))
    with open(os.path.join(BUILD, "cellvm-init.stripped"), "rb") as f:
        assert entries["init"][1] == f.read()
    assert entries["init"][0] & 0o111
    assert entries["dev/console"][0] & 0o170000 == 0o020000  # a character device
    rel = image["kernel"]["release"]
    kos = {n: data for n, (_, data) in entries.items() if n.endswith(".ko")}
    for n, data in kos.items():
        assert n.startswith(f"lib/modules/{rel}/kernel/"), n
        assert data[:4] == b"\x7fELF" and f"vermagic={rel} ".encode() in data, n
    shipped = {os.path.basename(n).split(".ko")[0] for n in kos}
    assert shipped == set(image["modules"]["files"])
    for m in image["modules"]["load"]:
        assert m in shipped or m.replace("_", "-") in shipped, m
    # modules.dep names exactly the shipped modules, with their dependencies
    moddep = entries[f"lib/modules/{rel}/modules.dep"][1].decode()
    dep_names = {os.path.basename(line.split(":")[0]).split(".ko")[0] for line in moddep.splitlines()}
    assert dep_names == shipped
    assert entries["etc/cellvm/modules"][1].decode().split() == image["modules"]["load"]


# --------------------------------------------------------------------- kernel
def bzimage_version(bz):
    """The version string the bzImage's boot-protocol header points to."""
    assert bz[0x202:0x206] == b"HdrS"
    off = struct.unpack_from("<H", bz, 0x20E)[0] + 0x200
    return bz[off:bz.index(b"\0", off)].decode()


def elf_notes(elf):
    """[(name, type, desc)] of the PT_NOTE segments of an ELF64 file."""
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    notes, loads = [], []
    for i in range(phnum):
        p_type, _, p_offset, _, p_paddr, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        if p_type == 1:  # PT_LOAD
            loads.append((p_paddr, p_filesz))
        elif p_type == 4:  # PT_NOTE
            pos, end = p_offset, p_offset + p_filesz
            while pos + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
                name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0").decode()
                dpos = pos + 12 + (namesz + 3 & ~3)
                notes.append((name, ntype, elf[dpos:dpos + descsz]))
                pos = dpos + (descsz + 3 & ~3)
    return notes, loads


def test_vmlinux_is_a_pvh_bootable_elf_of_the_same_kernel(image):
    """What Firecracker and Cloud Hypervisor need from vmlinux, checked against
    sources other than our extractor: an x86-64 ELF executable with the PVH
    entry note, whose Linux banner is the bzImage header's version string."""
    with open(os.path.join(IMAGE, "vmlinuz"), "rb") as f:
        bz = f.read()
    with open(os.path.join(IMAGE, "vmlinux"), "rb") as f:
        elf = f.read()
    assert elf[:4] == b"\x7fELF" and elf[4] == 2 and elf[5] == 1  # ELF64, little endian
    assert struct.unpack_from("<HH", elf, 16) == (2, 62)  # ET_EXEC, EM_X86_64
    notes, loads = elf_notes(elf)
    pvh = [d for name, t, d in notes if name == "Xen" and t == XEN_ELFNOTE_PHYS32_ENTRY]
    assert len(pvh) == 1, notes
    entry, = struct.unpack_from("<I", pvh[0])
    assert any(a <= entry < a + size for a, size in loads), hex(entry)
    # "6.1.0-57-cloud-amd64 (debian-kernel@...) #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (date)"
    bz_version = bzimage_version(bz)
    release, uts = bz_version.split()[0], bz_version[bz_version.index(" #") + 1:]
    file_out = subprocess.run(["file", "-b", os.path.join(IMAGE, "vmlinuz")], text=True,
                              stdout=subprocess.PIPE, check=True).stdout
    assert f"version {bz_version}," in file_out
    banners = re.findall(rb"Linux version (\S+) \(.*?\) (#[^\n\0]*)\n", elf)
    assert (release.encode(), uts.encode()) in banners, (bz_version, banners)
    assert release == image["kernel"]["release"]
    assert f" Debian {image['kernel']['version']} " in uts


def test_extractor_rejects_what_is_not_a_bzimage():
    with pytest.raises(extract_vmlinux.ExtractError, match="not a bzImage"):
        extract_vmlinux.extract(b"\0" * 4096)


def test_lz4_block_decoder_handles_overlapping_matches():
    # literals "ab", then a match of 10 at distance 2 (overlapping), then "c".
    block = bytes([0x26]) + b"ab" + bytes([2, 0]) + bytes([0x10]) + b"c"
    out = bytearray()
    extract_vmlinux.lz4_block(block, out)
    assert bytes(out) == b"ab" + b"ab" * 5 + b"c"


# ---------------------------------------------------------------- rootfs.erofs
def test_rootfs_erofs_is_intact_and_compressed_as_the_manifest_says(image):
    fmt = image["rootfs"]["formats"]["erofs"]
    # --extract without a directory decodes every file: what the kernel will read
    r = subprocess.run(["fsck.erofs", "--extract", EROFS], text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert r.returncode == 0, r.stdout
    stats = subprocess.run(["dump.erofs", "-s", "-S", EROFS], text=True, check=True,
                           stdout=subprocess.PIPE).stdout
    assert re.search(r"magic number:\s+0xE0F5E1E2", stats)
    compressed = int(re.search(r"compressed files:\s+(\d+)", stats).group(1))
    assert (compressed > 1000) == (fmt["compression"] != "none"), stats
    assert os.path.getsize(EROFS) < os.path.getsize(EXT4)


SAMPLE_DIRS = ["/usr/lib/cellvm", "/usr/bin", "/usr/sbin", "/etc/cellvm/mpl", "/home",
               "/usr/lib/python3/dist-packages/numpy", "/usr/lib/python3/dist-packages/matplotlib"]


@pytest.mark.parametrize("path", SAMPLE_DIRS)
def test_rootfs_erofs_holds_the_same_tree_as_the_ext4(image, path):
    ext4 = ext4_ls(path)
    assert ext4, path
    assert erofs_ls(path) == set(ext4)
    for name, (mode, uid, gid, size) in sorted(ext4.items()):
        if mode & 0o170000 == 0o040000:
            continue  # directory sizes differ between the formats
        st = erofs_stat(f"{path}/{name}")
        assert (st["mode"], st["uid"], st["gid"], st["size"]) == (mode, uid, gid, size), name


def test_rootfs_erofs_keeps_mtimes(image):
    """Python checks every .pyc against its source's mtime: a format that
    changed them would make each import compile again."""
    import datetime
    for path in ("/usr/lib/python3.11/os.py", "/usr/lib/python3/dist-packages/numpy/__init__.py",
                 "/usr/bin/cellvm-agent"):
        t = datetime.datetime.fromtimestamp(ext4_mtime(path), datetime.timezone.utc)
        assert erofs_stat(path)["mtime"] == t.strftime("%Y-%m-%d %H:%M:%S"), path


def test_erofs_root_boots_below_the_tmpfs_overlay(image):
    """The kernel mounts rootfs.erofs (module from the initramfs), cellvm-init
    puts the tmpfs overlay over it, and the data stack imports from it."""
    vm, conn = created_vm.create(memory_mb=1024, rootfs=EROFS, extra_cmdline="cellvm.debug=1")
    try:
        conn.close()
        argv = vm.argv()
        # --rootfs's type is read from the superblock: the manifest's line.
        assert f"file={EROFS}," in " ".join(argv)
        assert image["rootfs"]["formats"]["erofs"]["cmdline"] in argv[argv.index("-append") + 1]
        sbx = Sandbox.connect(vm.info["address"], request_timeout=FIRST_RUN_TIMEOUT)
        try:
            # no mount(8) in the image (util-linux' mount package is not essential)
            mounts = sbx.commands.run("cat /proc/mounts /sys/block/vda/ro; ls /sys/fs/erofs", timeout=60)
            ex = sbx.run_code("import io, numpy, pandas, matplotlib.pyplot as plt\n"
                              "plt.plot([1, 2]); png = io.BytesIO(); plt.savefig(png, format='png')\n"
                              "print(pandas.Series(numpy.arange(4)).sum(), png.getvalue()[1:4])",
                              timeout=FIRST_RUN_TIMEOUT)
        finally:
            sbx.close()
        console = vm.console()
    finally:
        vm.kill()
    lines = mounts.stdout.splitlines()
    root = [ln.split() for ln in lines if ln.split()[1:2] == ["/"]]
    assert len(root) == 1 and root[0][:3] == ["overlay", "/", "overlay"], mounts.stdout
    assert "lowerdir=/.cellvm-lower" in root[0][3] and "upperdir=/.cellvm-rw/upper" in root[0][3]
    # the lower layer is hidden below the overlay; the kernel's erofs instances are not
    assert "1" in lines and "vda" in lines, mounts.stdout  # read-only disk, an erofs on vda
    assert "switched root to /dev/vda (overlay on erofs)" in console, console[-3000:]
    assert ex.error is None, ex.error
    assert "".join(ex.logs.stdout).split() == ["6", "b'PNG'"]


# ---------------------------------------------------------------- incremental
def test_a_changed_agent_rebuilds_only_the_rootfs(image, tmp_path):
    """Incremental: the session's image, built from the same binaries and base
    layer, is up to date; a new agent costs the two mkfs, another erofs
    compression only mkfs.erofs, and nothing changed nothing."""
    build = tmp_path / "build"
    build.mkdir()
    bins = ("cellvm-agent", "cellvm-executor", "cellvm-init.stripped")
    absent = [b for b in bins if not os.path.exists(os.path.join(BUILD, b))]
    if absent:  # only with CELLVM_SKIP_IMAGE_BUILD=1: `make image` builds them
        pytest.skip(f"build/{absent[0]} is missing")
    for b in bins:
        shutil.copy2(os.path.join(BUILD, b), build / b)
    # Start from the session's image rather than a build of our own (one
    # rootfs build fewer). The two filesystems are linked, not copied: the
    # build replaces them (a new file, os.replace) and never writes into them.
    out = tmp_path / "out"
    out.mkdir()
    for name in os.listdir(IMAGE):
        src = os.path.join(IMAGE, name)
        if name.startswith("rootfs."):
            os.link(src, out / name)
        else:
            shutil.copy2(src, out / name)
    cmd = [sys.executable, os.path.join(ROOT, "image-build", "build_image.py"), "--build", str(build),
           "--cache", os.path.join(BUILD, "image-cache"), "--out", str(out)]

    def build_image(*extra):
        r = subprocess.run(cmd + list(extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stdout
        assert "mmdebstrap" not in r.stdout, r.stdout
        return r.stdout

    first = build_image()
    assert "base: cached" in first
    assert "initramfs: up to date" in first and "rootfs: up to date" in first, first
    os.utime(build / "cellvm-agent")  # "a changed agent"
    second = build_image()
    assert "initramfs: up to date" in second
    assert "rootfs: mkfs.ext4" in second and "rootfs: mkfs.erofs" in second
    third = build_image("--erofs-compression", "none")
    assert "rootfs.ext4 up to date" in third and "rootfs: mkfs.erofs (" in third, third
    assert "rootfs: up to date" in build_image("--erofs-compression", "none")
    with open(tmp_path / "out" / "manifest.json") as f:
        m = json.load(f)
    assert m["packages"] == image["packages"]
    erofs = m["rootfs"]["formats"]["erofs"]
    assert erofs["compression"] == "none"
    assert erofs["size"] == os.path.getsize(tmp_path / "out" / "rootfs.erofs")
