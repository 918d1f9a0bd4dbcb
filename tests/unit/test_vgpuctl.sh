#!/bin/sh
# SPDX-License-Identifier: MIT
# Usage: test_vgpuctl.sh [VGPUCTL]   (default: build/bin/vgpuctl)
# What vgpuctl does without the kernel module: version, the "not loaded"
# error of every netlink command, the CDI spec, usage errors. The checks
# that need the module absent are skipped where it is loaded; the rest run
# anyway. tests/kmod/t_vgpuctl.sh covers the module side, in QEMU.
# Exit 0 pass, 1 fail.
set -u

ctl=${1:-build/bin/vgpuctl}
if [ ! -x "$ctl" ]; then
	echo "usage: $0 VGPUCTL   ('$ctl' is not an executable)" >&2
	exit 1
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0

bad() {
	echo "FAIL: $*"
	fail=1
}

# run WANT_RC ARGS...: runs vgpuctl, output in $tmp/out and $tmp/err.
run() {
	want=$1
	shift
	"$ctl" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq "$want" ] || { bad "vgpuctl $* exited $rc, want $want"; cat "$tmp/err"; }
}

has() { # has FILE TEXT: fixed string
	grep -qF -- "$2" "$tmp/$1" || bad "'$2' not in the $1 of: vgpuctl $last"
}

# --- usage ----------------------------------------------------------------
last=""; run 2
has err "usage: vgpuctl"
last="frobnicate"; run 2 frobnicate
has err "unknown command 'frobnicate'"
has err "usage: vgpuctl"
last="--help"; run 0 --help
has out "sessions"
last="kill"; run 2 kill
has err "usage: vgpuctl kill SESSION"
last="kill abc"; run 2 kill abc
has err "'abc' is not a session id"
last="sessions --bogus"; run 2 sessions --bogus
last="stats extra"; run 2 stats extra
last="events --count 0"; run 2 events --count 0
last="version extra"; run 2 version extra
last="sessions --help"; run 0 sessions --help
has out "usage: vgpuctl sessions"

# --- version --------------------------------------------------------------
last="version"; run 0 version
grep -qE '^vgpuctl: [0-9]+\.[0-9]+' "$tmp/out" || bad "version: no tool version in: $(cat "$tmp/out")"
has out "/run/vgpu/client/vgpud.sock"
last="--version"; run 0 --version

# --- without the module ---------------------------------------------------
if [ -e /sys/module/vgpu ]; then
	echo "SKIP: the vgpu module is loaded here; not-loaded checks skipped"
else
	last="version"; run 0 version
	grep -q '^module: *not loaded' "$tmp/out" || bad "version does not say the module is not loaded"
	for cmd in "sessions --module" "sessions --module --json" stats "stats --json" events \
		"kill 1"; do
		last=$cmd
		# shellcheck disable=SC2086
		run 1 $cmd
		has err "vgpu kernel module not loaded (modprobe vgpu)"
		[ -s "$tmp/out" ] && bad "vgpuctl $cmd wrote to stdout: $(cat "$tmp/out")"
	done
	# sessions asks the daemon: none listens at this socket, and no module
	# to fall back on
	for cmd in sessions "sessions --json"; do
		last="$cmd --socket $tmp/none.sock"
		# shellcheck disable=SC2086
		run 1 $cmd --socket "$tmp/none.sock"
		has err "vgpud is not running (no control socket at $tmp/none.ctl)"
		[ -s "$tmp/out" ] && bad "vgpuctl $last wrote to stdout: $(cat "$tmp/out")"
	done
fi
last="sessions --socket"; run 2 sessions --socket
last="sessions 12x"; run 2 sessions 12x --socket "$tmp/none.sock"
has err "'12x' is not a session id"

# --- cdi ------------------------------------------------------------------
# check_cdi LIB SOCKET: the spec in $tmp/out, parsed.
check_cdi() {
	python3 - "$tmp/out" "$1" "$2" <<'EOF' || bad "cdi spec: see above"
import json, sys
path, lib, sock = sys.argv[1:4]
spec = json.load(open(path))
def need(cond, what):
    if not cond:
        print("cdi: " + what)
        sys.exit(1)
need(spec.get("cdiVersion") == "0.6.0", "cdiVersion")
need(spec.get("kind") == "vgpu.dev/gpu", "kind")
devs = spec.get("devices", [])
need(len(devs) == 1 and devs[0].get("name") == "all", "one device named all")
edits = devs[0]["containerEdits"]
need([d.get("path") for d in edits.get("deviceNodes", [])] == ["/dev/vgpu"], "deviceNodes /dev/vgpu")
need("VGPU_SOCKET=" + sock in edits.get("env", []), "env VGPU_SOCKET")
mounts = {m["containerPath"]: m for m in edits.get("mounts", [])}
for p in ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1"):
    need(p in mounts, "mount " + p)
    need(mounts[p]["hostPath"] == lib, "%s from %s, not %s" % (p, lib, mounts[p]["hostPath"]))
    need("ro" in mounts[p].get("options", []), p + " read-only")
nvml = lib.rsplit("/", 1)[0] + "/libnvidia-ml.so.1"
for p in ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.1"):
    need(p in mounts, "mount " + p)
    need(mounts[p]["hostPath"] == nvml, "%s from %s, not %s" % (p, nvml, mounts[p]["hostPath"]))
    need("ro" in mounts[p].get("options", []), p + " read-only")
sockdir = sock.rsplit("/", 1)[0]
need(sockdir in mounts, "mount of the socket's folder " + sockdir)
need("ro" in mounts[sockdir].get("options", []), "socket folder read-only")
EOF
}

last="cdi"; run 0 cdi
python3 -m json.tool "$tmp/out" >/dev/null || bad "cdi: not valid JSON"
# Containers get the client socket's folder, never the control socket's
# (nor /run/vgpu, which holds both).
python3 - "$tmp/out" <<'EOF' || bad "cdi: the control socket reaches the container"
import json, sys
edits = json.load(open(sys.argv[1]))["devices"][0]["containerEdits"]
hosts = [m["hostPath"] for m in edits["mounts"]]
ok = "/run/vgpu/client" in hosts and not any(
    h in ("/run/vgpu", "/run/vgpu/control") or h.startswith("/run/vgpu/control/") for h in hosts)
if not ok:
    print("cdi mounts: %s" % hosts)
sys.exit(0 if ok else 1)
EOF
grep -q warning "$tmp/err" && bad "cdi with the default sockets warned: $(cat "$tmp/err")"
has out "/dev/vgpu"
has out "libvgpu.so"
# The default runtime folder is <bin>/../lib/vgpu, resolved where it exists.
dir=$(cd "$(dirname "$ctl")/.." && pwd)/lib/vgpu
if [ -e "$dir/libvgpu.so" ]; then
	check_cdi "$(readlink -f "$dir/libvgpu.so")" /run/vgpu/vgpud.sock
fi

mkdir -p "$tmp/rt"
: >"$tmp/rt/libvgpu.so"
: >"$tmp/rt/libnvidia-ml.so.1"
last="cdi --runtime-dir"; run 0 cdi --runtime-dir "$tmp/rt"
check_cdi "$(readlink -f "$tmp/rt/libvgpu.so")" /run/vgpu/vgpud.sock
last="cdi --runtime-dir missing"; run 0 cdi --runtime-dir /nonexistent/lib/vgpu
has err "warning: /nonexistent/lib/vgpu/libvgpu.so"
check_cdi /nonexistent/lib/vgpu/libvgpu.so /run/vgpu/vgpud.sock
last="cdi --socket"; run 0 cdi --runtime-dir "$tmp/rt" --socket /srv/vgpu/ctl.sock
check_cdi "$(readlink -f "$tmp/rt/libvgpu.so")" /run/vgpu/ctl.sock
grep -q '"hostPath": "/srv/vgpu", "containerPath": "/run/vgpu"' "$tmp/out" ||
	bad "cdi --socket: /srv/vgpu not mounted at /run/vgpu"
# That socket's control socket is beside it, so in the folder mounted.
has err "warning: the control socket /srv/vgpu/ctl.ctl is in the folder"
last="cdi --socket relative"; run 2 cdi --socket vgpud.sock
last="cdi --runtime-dir"; run 2 cdi --runtime-dir

if [ $fail -eq 0 ]; then
	echo "PASS: vgpuctl"
fi
exit $fail
