#!/usr/bin/python3
"""Extract the uncompressed ELF vmlinux from an x86 bzImage.

Firecracker and Cloud Hypervisor load an ELF (or PVH) kernel, not a bzImage.
Unlike scripts/extract-vmlinux, which scans for every compression magic, we
read the payload's exact place from the boot protocol header (payload_offset
and payload_length, boot protocol >= 2.08), then decompress it by its magic.

Usage: extract_vmlinux.py BZIMAGE OUT
"""

import bz2
import gzip
import lzma
import shutil
import struct
import subprocess
import sys

SETUP_SECTS_OFF = 0x1F1
HDR_MAGIC_OFF = 0x202  # "HdrS"
VERSION_OFF = 0x206
PAYLOAD_OFF = 0x248  # u32 offset from the start of the protected-mode code
PAYLOAD_LEN_OFF = 0x24C


class ExtractError(Exception):
    pass


def payload_of(image):
    """Return the compressed payload bytes of a bzImage."""
    if len(image) < 0x250 or image[HDR_MAGIC_OFF:HDR_MAGIC_OFF + 4] != b"HdrS":
        raise ExtractError("not a bzImage (no HdrS header)")
    (version,) = struct.unpack_from("<H", image, VERSION_OFF)
    if version < 0x0208:
        raise ExtractError(f"boot protocol {version >> 8}.{version & 0xff} has no payload fields")
    setup_sects = image[SETUP_SECTS_OFF] or 4
    pm_start = (setup_sects + 1) * 512
    off, length = struct.unpack_from("<II", image, PAYLOAD_OFF)
    start = pm_start + off
    if start + length > len(image):
        raise ExtractError("payload runs past the end of the image")
    return image[start:start + length]


def lz4_block(src, out):
    """Decompress one LZ4 block (the raw block format) appending to `out`."""
    i, n = 0, len(src)
    while i < n:
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        out += src[i:i + lit]
        i += lit
        if i >= n:  # the last sequence has literals only
            break
        dist = src[i] | (src[i + 1] << 8)
        i += 2
        mlen = token & 15
        if mlen == 15:
            while True:
                b = src[i]
                i += 1
                mlen += b
                if b != 255:
                    break
        mlen += 4
        if dist == 0 or dist > len(out):
            raise ExtractError("corrupt lz4 block (bad match offset)")
        start = len(out) - dist
        if dist >= mlen:
            out += out[start:start + mlen]
        else:  # overlapping match: repeat the last `dist` bytes
            pattern = out[start:]
            reps, rest = divmod(mlen, dist)
            out += pattern * reps + pattern[:rest]


def lz4_legacy(data):
    """Decompress the LZ4 "legacy" frame the kernel's lz4 compressor writes."""
    try:
        import lz4.block as fast  # python3-lz4, if present: same result, faster
    except ImportError:
        fast = None
    out = bytearray()
    i = 4
    while i + 4 <= len(data):
        (size,) = struct.unpack_from("<I", data, i)
        if size == 0x184C2102:  # a new frame after concatenation
            i += 4
            continue
        i += 4
        block = data[i:i + size]
        if len(block) < size:
            break  # trailing bytes (the kernel appends the size)
        i += size
        if fast is not None:
            out += fast.decompress(block, uncompressed_size=8 << 20)
        else:
            lz4_block(block, out)
    return bytes(out)


def zstd(data):
    if not shutil.which("zstd"):
        raise ExtractError("zstd payload and no zstd tool")
    return subprocess.run(["zstd", "-dc"], input=data, stdout=subprocess.PIPE, check=True).stdout


def decompress(payload):
    if payload[:2] == b"\x1f\x8b":
        return gzip.decompress(payload)
    if payload[:6] == b"\xfd7zXZ\x00":
        return lzma.decompress(payload, format=lzma.FORMAT_XZ)
    if payload[:3] == b"BZh":
        return bz2.decompress(payload)
    if payload[:3] == b"\x5d\x00\x00":
        return lzma.decompress(payload, format=lzma.FORMAT_ALONE)
    if payload[:4] == b"\x02\x21\x4c\x18":
        return lz4_legacy(payload)
    if payload[:4] == b"\x28\xb5\x2f\xfd":
        return zstd(payload)
    raise ExtractError(f"unknown compression (magic {payload[:6].hex()})")


def extract(image):
    out = decompress(payload_of(image))
    if out[:4] != b"\x7fELF":
        raise ExtractError("decompressed payload is not an ELF file")
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        image = f.read()
    try:
        vmlinux = extract(image)
    except (ExtractError, OSError, lzma.LZMAError, subprocess.CalledProcessError) as e:
        print(f"extract_vmlinux: {argv[1]}: {e}", file=sys.stderr)
        return 1
    tmp = argv[2] + ".tmp"
    with open(tmp, "wb") as f:
        f.write(vmlinux)
    import os

    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
