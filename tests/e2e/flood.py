#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A tenant that floods vgpud's client socket with silent connections.

    flood.py SOCKET COUNT READY-FILE HOLD-SECONDS [MESSAGE-AT]

Opens COUNT connections and says nothing on any of them; writes READY-FILE
("connected N") once all are open, so the runner can check that other users
are still served meanwhile; then waits up to HOLD-SECONDS for the daemon to
refuse or drop every one. A connection's end is read as the daemon's
refusal (a welcome with a negative status and a message; on the control
socket, MESSAGE-AT 16, a control reply). Prints one line:

    flood: N connected, R refused at once (WHY), D dropped after S s (WHY), O still open

and exits 0 when every connection was refused or dropped, 1 otherwise.
"""
import os
import resource
import select
import socket
import sys
import time

MESSAGE_AT = 128  # offsetof(struct vgpu_welcome, message), include/vgpu/proto.h


def reason(data):
    """The message of a refusal welcome, or what the bytes were."""
    if len(data) <= MESSAGE_AT:
        return "closed without a word" if not data else f"{len(data)} bytes"
    status = int.from_bytes(data[8:12], "little", signed=True)
    text = data[MESSAGE_AT:].split(b"\0", 1)[0].decode(errors="replace")
    return f"status {status}: {text}"


def closed(sockets, wait):
    """The sockets that are readable (answered or hung up) within wait s."""
    out = {}
    poller = select.poll()
    for fd in sockets:
        poller.register(fd, select.POLLIN | select.POLLHUP)
    for fd, _ in poller.poll(wait * 1000):
        s = sockets[fd]
        try:
            data = s.recv(4096)
        except OSError as e:
            data = str(e).encode()
        out[fd] = reason(data)
    return out


def main():
    global MESSAGE_AT
    path, count, ready, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    if len(sys.argv) > 5:
        MESSAGE_AT = int(sys.argv[5])  # 16: offsetof(struct vgpu_ctl_reply, message)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sockets = {}
    for _ in range(count):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # blocking: waits for accept
        try:
            s.connect(path)
        except OSError as e:
            print(f"flood: connect failed after {len(sockets)}: {e}")
            return 1
        sockets[s.fileno()] = s
    t0 = time.monotonic()
    # Refusals at accept come at once; take them before the others' time runs out.
    time.sleep(0.5)
    first = closed(sockets, 0)
    for fd in first:
        sockets.pop(fd).close()
    with open(ready + ".tmp", "w") as f:
        f.write(f"connected {count}\n")
    os.rename(ready + ".tmp", ready)
    later = {}
    while sockets and time.monotonic() - t0 < hold:
        got = closed(sockets, 0.2)
        for fd, why in got.items():
            later[fd] = (why, time.monotonic() - t0)
            sockets.pop(fd).close()
    why1 = sorted(set(first.values()))[:1]
    why2 = sorted(set(w for w, _ in later.values()))[:1]
    last = max((t for _, t in later.values()), default=0.0)
    print(f"flood: {count} connected, {len(first)} refused at once ({'; '.join(why1)}), "
          f"{len(later)} dropped after {last:.1f} s ({'; '.join(why2)}), {len(sockets)} still open")
    return 0 if not sockets else 1


if __name__ == "__main__":
    sys.exit(main())
