#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Gives a checkpoint file another session number, as its owner could.

    ckpt_session.py FILE SESSION

Rewrites the header's session_id and its header_crc (CRC32C of the 508 bytes
before it, include/vgpu/ckpt.h); the sections and their CRCs stay valid, so
the daemon sees a well-formed file that names SESSION.
"""
import struct
import sys

SESSION_AT = 56  # offsetof(struct vgpu_ckpt_header, session_id)
CRC_AT = 508     # offsetof(struct vgpu_ckpt_header, header_crc)


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def main():
    path, session = sys.argv[1], int(sys.argv[2], 0)
    with open(path, "r+b") as f:
        head = bytearray(f.read(CRC_AT + 4))
        struct.pack_into("<Q", head, SESSION_AT, session)
        struct.pack_into("<I", head, CRC_AT, crc32c(head[:CRC_AT]))
        f.seek(0)
        f.write(head)
    return 0


if __name__ == "__main__":
    sys.exit(main())
