#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Makes a checkpoint file's first module image claim more bytes than it has,
with every checksum made right again, as the file's owner could.

    ckpt_bad_image.py FILE

A fatbin's header gets a size of 2^40, a cubin (ELF) a section table at
2^40, PTX loses its NUL. The section's, the table's and the header's CRC32C
are recomputed (include/vgpu/ckpt.h), so only the image check can refuse it.
Prints what it changed; exit 1 when the file has no plain module image.
"""
import struct
import sys

SEC_MODULE_IMAGE = 4
SECTION = struct.Struct("<IIQQQQIIQQ")  # struct vgpu_ckpt_section, 64 bytes


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def spoil(img):
    if img[:4] == b"\x50\xed\x55\xba":
        struct.pack_into("<Q", img, 8, 1 << 40)
        return "fatbin size 2^40"
    if img[:4] == b"\x7fELF":
        struct.pack_into("<Q", img, 0x28, 1 << 40)
        return "ELF e_shoff 2^40"
    img[-1:] = b"x"
    return "PTX without its NUL"


def main():
    with open(sys.argv[1], "r+b") as f:
        data = bytearray(f.read())
        count, = struct.unpack_from("<I", data, 28)
        table, = struct.unpack_from("<Q", data, 32)
        for i in range(count):
            at = table + i * SECTION.size
            s = list(SECTION.unpack_from(data, at))
            if s[0] != SEC_MODULE_IMAGE or s[7] != 0 or not s[3]:
                continue
            img = bytearray(data[s[3]:s[3] + s[4]])
            what = spoil(img)
            data[s[3]:s[3] + s[4]] = img
            s[6] = crc32c(img)
            SECTION.pack_into(data, at, *s)
            struct.pack_into("<I", data, 108, crc32c(data[table:table + count * SECTION.size]))
            struct.pack_into("<I", data, 508, crc32c(data[:508]))
            f.seek(0)
            f.write(data)
            print(f"module image {s[2]:#x}: {what}")
            return 0
    print("no plain module image in the file")
    return 1


if __name__ == "__main__":
    sys.exit(main())
