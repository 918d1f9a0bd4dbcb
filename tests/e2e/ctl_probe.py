#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Sends hand-made requests to vgpud's control socket (include/vgpu/ctl.h),
with descriptors of every kind (a FIFO, a directory, a socket, too many,
some where none belong), and checks each refusal: status and message, which
never quotes a file. Prints one line per check; exit 0 when all hold, 1
otherwise.

    ctl_probe.py CONTROL_SOCKET
"""
import errno
import os
import shutil
import socket
import struct
import sys
import tempfile

MAGIC, VERSION, SESSIONS, CHECKPOINT, MIGRATE, RESTORE = 0x4C544356, 4, 1, 2, 3, 4
F_GPU = 16


def gpu(n):
    """The request's gpu field and the 32 reserved bytes after it."""
    return struct.pack("<I", n) + bytes(32)


def req(magic=MAGIC, version=VERSION, op=SESSIONS, flags=0, session=0, arg=b"", arg_len=None,
        reserved=bytes(36)):
    n = len(arg) if arg_len is None else arg_len
    return struct.pack("<IIIIQI", magic, version, op, flags, session, n) + reserved + arg


def ask(path, payload, fds=()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(path)
    if fds:
        socket.send_fds(s, [payload], list(fds))
    else:
        s.send(payload)
    r = s.recv(4096)
    s.close()
    if len(r) != 128:
        return None, None, "reply of %d bytes" % len(r)
    magic, _, status, count = struct.unpack("<IIiI", r[:16])
    return status, count, r[16:].split(b"\0")[0].decode(errors="replace")


def files(tmp):
    """Descriptors of every kind a request could bring: name -> fd."""
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    with open(os.path.join(tmp, "full"), "wb") as f:
        f.write(b"root:x:0:0:root:/root:/bin/bash\n" * 64)
    return {
        "empty": os.open(os.path.join(tmp, "empty"), os.O_RDWR | os.O_CREAT, 0o600),
        "readonly": os.open(os.path.join(tmp, "empty"), os.O_RDONLY),
        "full": os.open(os.path.join(tmp, "full"), os.O_RDWR),
        "fifo": os.open(fifo, os.O_RDWR),
        "dir": os.open(tmp, os.O_RDONLY | os.O_DIRECTORY),
        "socket": socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).detach(),
    }


def main():
    path = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="ctl-probe.")
    fd = files(tmp)
    ck = dict(op=CHECKPOINT, session=1)
    e = [fd["empty"]]
    cases = [
        ("short request", req()[:40], (), -errno.EINVAL, "at least 64 bytes"),
        ("long request", req() + b"x", (), -errno.EINVAL, "not the request and its argument"),
        ("argument longer than said", req(arg=b"/x\0", arg_len=2), (), -errno.EINVAL,
         "not the request and its argument"),
        ("sessions with an argument", req(arg=b"/x\0"), (), -errno.EINVAL, "no argument"),
        ("checkpoint without a session", req(op=CHECKPOINT, arg=b"/tmp/x\0"), e, -errno.EINVAL,
         "needs a session"),
        ("checkpoint without a path", req(**ck), e, -errno.EINVAL, "NUL-terminated"),
        ("path without its NUL", req(arg=b"/tmp/x", **ck), e, -errno.EINVAL, "NUL-terminated"),
        ("path with two NULs", req(arg=b"/tmp\0x\0", **ck), e, -errno.EINVAL, "NUL-terminated"),
        ("relative path", req(arg=b"x.vgc\0", **ck), e, -errno.EINVAL, "absolute"),
        ("checkpoint flag unknown", req(flags=16, arg=b"/tmp/x\0", **ck), e, -errno.EINVAL,
         "unknown flags"),
        ("checkpoint of no session", req(op=CHECKPOINT, session=987654321, arg=b"/tmp/x\0"), e,
         -errno.ENOENT, "no session 987654321"),
        ("checkpoint without its file", req(arg=b"/tmp/x\0", **ck), (), -errno.EINVAL,
         "needs the file's descriptor"),
        ("checkpoint with two files", req(arg=b"/tmp/x\0", **ck), e * 2, -errno.EINVAL,
         "takes one file descriptor"),
        ("checkpoint into a FIFO", req(arg=b"/tmp/x\0", **ck), [fd["fifo"]], -errno.EINVAL,
         "not a regular file"),
        ("checkpoint into a directory", req(arg=b"/tmp/x\0", **ck), [fd["dir"]], -errno.EINVAL,
         "not a regular file"),
        ("checkpoint into a socket", req(arg=b"/tmp/x\0", **ck), [fd["socket"]], -errno.EINVAL,
         "not a regular file"),
        ("checkpoint into a read-only file", req(arg=b"/tmp/x\0", **ck), [fd["readonly"]],
         -errno.EBADF, "reading and writing"),
        ("checkpoint into a file with content", req(arg=b"/tmp/x\0", **ck), [fd["full"]],
         -errno.EEXIST, "not empty"),
        ("migrate without a session", req(op=MIGRATE), (), -errno.EINVAL, "needs a session"),
        ("migrate with an argument", req(op=MIGRATE, session=1, arg=b"/x\0"), (), -errno.EINVAL,
         "no argument"),
        ("migrate with a flag", req(op=MIGRATE, session=1, flags=1), (), -errno.EINVAL,
         "unknown flags"),
        ("migrate with a file", req(op=MIGRATE, session=1), e, -errno.EINVAL,
         "takes no file descriptor"),
        ("migrate of no session", req(op=MIGRATE, session=987654321), (), -errno.ENOENT,
         "no session 987654321"),
        ("sessions with a file", req(), e, -errno.EINVAL, "takes no file descriptor"),
        ("restore with a session", req(op=RESTORE, session=1, arg=b"/tmp/x\0"), e, -errno.EINVAL,
         "takes no session"),
        ("restore without a path", req(op=RESTORE), e, -errno.EINVAL, "NUL-terminated"),
        ("restore of a relative path", req(op=RESTORE, arg=b"x.vgc\0"), e, -errno.EINVAL,
         "absolute"),
        ("restore with a flag", req(op=RESTORE, flags=1, arg=b"/tmp/x\0"), e, -errno.EINVAL,
         "unknown flags"),
        ("restore without its files", req(op=RESTORE, arg=b"/tmp/x\0"), (), -errno.EINVAL,
         "needs the files' descriptors"),
        ("restore of 65 files", req(op=RESTORE, arg=b"/tmp/x\0"), e * 65, -errno.EINVAL,
         "more descriptors than a chain of checkpoints has"),
        ("restore of 200 files", req(op=RESTORE, arg=b"/tmp/x\0"), e * 200, -errno.EINVAL,
         "more file descriptors than any request takes"),
        ("restore of a FIFO", req(op=RESTORE, arg=b"/tmp/x\0"), [fd["fifo"]], -errno.EINVAL,
         "not a regular file"),
        ("restore of a directory", req(op=RESTORE, arg=b"/tmp/x\0"), [fd["dir"]], -errno.EINVAL,
         "not a regular file"),
        ("restore of a socket", req(op=RESTORE, arg=b"/tmp/x\0"), [fd["socket"]], -errno.EINVAL,
         "not a regular file"),
        ("restore of a file that is no checkpoint", req(op=RESTORE, arg=b"/etc/passwd\0"),
         [fd["full"]], -errno.ENOEXEC, "not a vgpu checkpoint"),
        ("restore of an empty file", req(op=RESTORE, arg=b"/tmp/x\0"), e, -errno.EBADMSG,
         "truncated"),
        ("a GPU index without its flag", req(op=MIGRATE, session=1, reserved=gpu(1)), (),
         -errno.EINVAL, "without the GPU flag"),
        ("GPU index 64", req(op=MIGRATE, session=1, flags=F_GPU, reserved=gpu(64)), (),
         -errno.EINVAL, "out of range"),
        ("migrate to a GPU not there", req(op=MIGRATE, session=1, flags=F_GPU, reserved=gpu(7)),
         (), -errno.ENODEV, "no GPU 7"),
        ("restore onto a GPU not there", req(op=RESTORE, flags=F_GPU, reserved=gpu(7),
                                             arg=b"/tmp/x\0"), e, -errno.ENODEV, "no GPU 7"),
        ("checkpoint with the GPU flag", req(flags=F_GPU, arg=b"/tmp/x\0", **ck), e,
         -errno.EINVAL, "unknown flags"),
        ("bad magic", req(magic=0x12345678), e, -errno.EINVAL, "bad magic"),
        ("version 3", req(version=3), (), -errno.EPROTONOSUPPORT, "version"),
        ("version 5", req(version=5), (), -errno.EPROTONOSUPPORT, "version"),
        ("unknown flags", req(flags=1), (), -errno.EINVAL, "flags"),
        ("reserved byte", req(reserved=bytes(35) + b"\1"), (), -errno.EINVAL, "reserved"),
        ("unknown operation", req(op=99), e, -errno.EOPNOTSUPP, "unknown operation"),
        ("no such session", req(session=987654321), (), -errno.ENOENT, "no session 987654321"),
    ]
    bad = 0
    for name, payload, fds, want, text in cases:
        status, count, msg = ask(path, payload, fds)
        # Never a file's content: the file with content holds "root:x:0:0".
        ok = status == want and count == 0 and text in msg and "root" not in msg \
            and "726f6f74" not in msg
        bad += not ok
        print("%s %s: status %s, %r" % ("ok  " if ok else "FAIL", name, status, msg))
    for f in fd.values():
        os.close(f)
    shutil.rmtree(tmp)
    status, count, msg = ask(path, req())
    ok = status == 0
    bad += not ok
    print("%s a good request after all that: status %s, %s sessions" % ("ok  " if ok else "FAIL", status, count))
    return 1 if bad else 0


sys.exit(main())
