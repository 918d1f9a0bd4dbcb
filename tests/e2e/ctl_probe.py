#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Sends hand-made requests to vgpud's control socket (include/vgpu/ctl.h)
and checks each refusal: status and message. Prints one line per check;
exit 0 when all hold, 1 otherwise.

    ctl_probe.py CONTROL_SOCKET
"""
import errno
import socket
import struct
import sys

MAGIC, VERSION, SESSIONS, CHECKPOINT, MIGRATE, RESTORE = 0x4C544356, 3, 1, 2, 3, 4
F_GPU = 16


def gpu(n):
    """The request's gpu field and the 32 reserved bytes after it."""
    return struct.pack("<I", n) + bytes(32)


def req(magic=MAGIC, version=VERSION, op=SESSIONS, flags=0, session=0, arg=b"", arg_len=None,
        reserved=bytes(36)):
    n = len(arg) if arg_len is None else arg_len
    return struct.pack("<IIIIQI", magic, version, op, flags, session, n) + reserved + arg


def ask(path, payload):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(path)
    s.send(payload)
    r = s.recv(4096)
    s.close()
    if len(r) != 128:
        return None, None, "reply of %d bytes" % len(r)
    magic, _, status, count = struct.unpack("<IIiI", r[:16])
    return status, count, r[16:].split(b"\0")[0].decode()


def main():
    path = sys.argv[1]
    ck = dict(op=CHECKPOINT, session=1)
    cases = [
        ("short request", req()[:40], -errno.EINVAL, "at least 64 bytes"),
        ("long request", req() + b"x", -errno.EINVAL, "not the request and its argument"),
        ("argument longer than said", req(arg=b"/x\0", arg_len=2), -errno.EINVAL,
         "not the request and its argument"),
        ("sessions with an argument", req(arg=b"/x\0"), -errno.EINVAL, "no argument"),
        ("checkpoint without a session", req(op=CHECKPOINT, arg=b"/tmp/x\0"), -errno.EINVAL,
         "needs a session"),
        ("checkpoint without a path", req(**ck), -errno.EINVAL, "NUL-terminated"),
        ("path without its NUL", req(arg=b"/tmp/x", **ck), -errno.EINVAL, "NUL-terminated"),
        ("path with two NULs", req(arg=b"/tmp\0x\0", **ck), -errno.EINVAL, "NUL-terminated"),
        ("relative path", req(arg=b"x.vgc\0", **ck), -errno.EINVAL, "absolute"),
        ("checkpoint flag unknown", req(flags=16, arg=b"/tmp/x\0", **ck), -errno.EINVAL,
         "unknown flags"),
        ("checkpoint of no session", req(op=CHECKPOINT, session=987654321, arg=b"/tmp/x\0"),
         -errno.ENOENT, "no session 987654321"),
        ("migrate without a session", req(op=MIGRATE), -errno.EINVAL, "needs a session"),
        ("migrate with an argument", req(op=MIGRATE, session=1, arg=b"/x\0"), -errno.EINVAL,
         "no argument"),
        ("migrate with a flag", req(op=MIGRATE, session=1, flags=1), -errno.EINVAL,
         "unknown flags"),
        ("migrate of no session", req(op=MIGRATE, session=987654321), -errno.ENOENT,
         "no session 987654321"),
        ("restore with a session", req(op=RESTORE, session=1, arg=b"/tmp/x\0"), -errno.EINVAL,
         "takes no session"),
        ("restore without a path", req(op=RESTORE), -errno.EINVAL, "NUL-terminated"),
        ("restore of a relative path", req(op=RESTORE, arg=b"x.vgc\0"), -errno.EINVAL, "absolute"),
        ("restore with a flag", req(op=RESTORE, flags=1, arg=b"/tmp/x\0"), -errno.EINVAL,
         "unknown flags"),
        ("a GPU index without its flag", req(op=MIGRATE, session=1, reserved=gpu(1)),
         -errno.EINVAL, "without the GPU flag"),
        ("GPU index 64", req(op=MIGRATE, session=1, flags=F_GPU, reserved=gpu(64)),
         -errno.EINVAL, "out of range"),
        ("migrate to a GPU not there", req(op=MIGRATE, session=1, flags=F_GPU, reserved=gpu(7)),
         -errno.ENODEV, "no GPU 7"),
        ("restore onto a GPU not there", req(op=RESTORE, flags=F_GPU, reserved=gpu(7),
                                             arg=b"/tmp/x\0"), -errno.ENODEV, "no GPU 7"),
        ("checkpoint with the GPU flag", req(flags=F_GPU, arg=b"/tmp/x\0", **ck), -errno.EINVAL,
         "unknown flags"),
        ("restore of a missing file", req(op=RESTORE, arg=b"/nonexistent/x.vgc\0"), -errno.ENOENT,
         "No such file"),
        ("restore of a file that is no checkpoint", req(op=RESTORE, arg=b"/etc/passwd\0"),
         -errno.ENOEXEC, "not a vgpu checkpoint"),
        ("bad magic", req(magic=0x12345678), -errno.EINVAL, "bad magic"),
        ("version 4", req(version=4), -errno.EPROTONOSUPPORT, "version"),
        ("version 2", req(version=2), -errno.EPROTONOSUPPORT, "version"),
        ("unknown flags", req(flags=1), -errno.EINVAL, "flags"),
        ("reserved byte", req(reserved=bytes(35) + b"\1"), -errno.EINVAL, "reserved"),
        ("unknown operation", req(op=99), -errno.EOPNOTSUPP, "unknown operation"),
        ("no such session", req(session=987654321), -errno.ENOENT, "no session 987654321"),
    ]
    bad = 0
    for name, payload, want, text in cases:
        status, count, msg = ask(path, payload)
        ok = status == want and count == 0 and text in msg
        bad += not ok
        print("%s %s: status %s, %r" % ("ok  " if ok else "FAIL", name, status, msg))
    status, count, msg = ask(path, req())
    ok = status == 0
    bad += not ok
    print("%s a good request after all that: status %s, %s sessions" % ("ok  " if ok else "FAIL", status, count))
    return 1 if bad else 0


sys.exit(main())
