"""A writer of "newc" cpio archives, the format the kernel unpacks as initramfs.

Written here so the build needs neither the cpio tool nor root: ownership and
device nodes are whatever we declare, not what the build machine has.
"""

import os
import stat

TRAILER = "TRAILER!!!"


class CpioWriter:
    def __init__(self, fileobj, mtime=0):
        self.f = fileobj
        self.ino = 1
        self.mtime = mtime

    def _entry(self, name, mode, data=b"", uid=0, gid=0, nlink=1, rdev=(0, 0)):
        name_b = name.encode() + b"\0"
        header = "070701" + "".join(
            "%08X" % v
            for v in (self.ino, mode, uid, gid, nlink, self.mtime, len(data), 0, 0, rdev[0], rdev[1],
                      len(name_b), 0))
        self.ino += 1
        self.f.write(header.encode() + name_b)
        self.f.write(b"\0" * (-(110 + len(name_b)) % 4))
        self.f.write(data)
        self.f.write(b"\0" * (-len(data) % 4))

    def directory(self, name, perm=0o755):
        self._entry(name, stat.S_IFDIR | perm, nlink=2)

    def file(self, name, data, perm=0o644):
        self._entry(name, stat.S_IFREG | perm, data)

    def symlink(self, name, target):
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def char_device(self, name, major, minor, perm=0o600):
        self._entry(name, stat.S_IFCHR | perm, rdev=(major, minor))

    def tree(self, src, dest):
        """Add the contents of directory `src` under `dest` (files, dirs, symlinks)."""
        for dirpath, dirnames, filenames in os.walk(src):
            dirnames.sort()
            rel = os.path.relpath(dirpath, src)
            base = dest if rel == "." else f"{dest}/{rel}"
            if rel != ".":
                self.directory(base)
            for fn in sorted(filenames):
                path = os.path.join(dirpath, fn)
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    self.symlink(f"{base}/{fn}", os.readlink(path))
                else:
                    with open(path, "rb") as f:
                        self.file(f"{base}/{fn}", f.read(), stat.S_IMODE(st.st_mode))

    def close(self):
        self._entry(TRAILER, 0, nlink=1)
        self.f.write(b"\0" * (-self.f.tell() % 512))
