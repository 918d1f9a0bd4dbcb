#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
# vgpuctl against the loaded module, in the QEMU guest (busybox sh, root):
# version, sessions (table, --json, one id), stats, events catching an open
# and a close, kill, and what an unprivileged user is told. h_vgpuctl holds
# the server and the sessions. Exit 0 pass, 1 fail, 77 skip.
set -u

command -v vgpuctl >/dev/null || { echo "no vgpuctl in the guest"; exit 77; }
command -v h_vgpuctl >/dev/null || { echo "no h_vgpuctl in the guest"; exit 77; }

t=/tmp/vgpuctl
mkdir -p $t
pids=

cleanup() {
	exec 3>&-
	for p in $pids; do kill "$p" 2>/dev/null; done
}

fail() {
	echo "t_vgpuctl: FAIL: $*"
	for f in "$t"/*; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
	cleanup
	exit 1
}

# ctl WANT_RC ARGS...: vgpuctl with stdout in $t/out, stderr in $t/err.
ctl() {
	want=$1
	shift
	vgpuctl "$@" >$t/out 2>$t/err
	rc=$?
	[ $rc -eq "$want" ] || fail "vgpuctl $* exited $rc, want $want"
}

has() { # has FILE TEXT
	grep -qF -- "$2" "$1" || fail "'$2' not in $1"
}

# wait_for FILE TEXT: up to 10 s.
wait_for() {
	for _ in $(seq 100); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "timed out waiting for '$2' in $1"
}

# --- version --------------------------------------------------------------
ctl 0 version
has $t/out "module:  ABI 1"
cat $t/out

# --- events listeners first, then a session -------------------------------
vgpuctl events >$t/events.txt 2>$t/events.err &
ev_txt=$!
vgpuctl events --json --count 2 >$t/events.json 2>$t/events.json.err &
ev_json=$!
pids="$ev_txt $ev_json"
sleep 1	# both have joined the group: they start in milliseconds

mkfifo $t/hold.in
h_vgpuctl serve <$t/hold.in >$t/hold.out 2>$t/hold.err &
hold=$!
pids="$pids $hold"
exec 3>$t/hold.in
wait_for $t/hold.out SESSION
id=$(awk '/^SESSION/ { print $2; exit }' $t/hold.out)

# --- sessions ---------------------------------------------------------------
ctl 0 sessions --module
cat $t/out
has $t/out "SUBMITTED"
# ID PID UID COMM STATE SQ CQ ARENA PINNED SUBMITTED COMPLETED
awk -v id="$id" '$1 == id && $3 == 0 && $4 == "h_vgpuctl" && $5 == "ready" &&
	$6 == 64 && $7 == 128 && $8 == "1M" && $9 == "12K" && $10 == 3 &&
	$11 == 2 { ok = 1 } END { exit !ok }' $t/out || fail "sessions: no row for session $id"

# No vgpud answers at this socket: a plain `sessions` falls back to the module's.
ctl 0 sessions --socket $t/none.sock
has $t/err "no vgpud answers at $t/none.ctl"
grep -q "^$id " $t/out || fail "sessions without a vgpud: no module row for $id"
ctl 0 sessions --module --json
cat $t/out
has $t/out "\"id\": $id, "
has $t/out "\"comm\": \"h_vgpuctl\", \"state\": \"ready\""
has $t/out "\"sq_entries\": 64, \"cq_entries\": 128, \"arena_bytes\": 1048576, \"pinned_bytes\": 12288, \"regions\": 1, \"submitted\": 3, \"completed\": 2}"
head -c 1 $t/out | grep -q '\[' || fail "sessions --json is not an array"

ctl 0 sessions --module "$id"
grep -q "^$id " $t/out || fail "sessions $id: no row"
ctl 0 sessions --module --json "$id"
has $t/out "\"id\": $id, "
ctl 1 sessions --module 999999
has $t/err "no session 999999"

# --- stats ------------------------------------------------------------------
ctl 0 stats
cat $t/out
has $t/out "registered"
grep -qE '^sessions: +[1-9][0-9]* open' $t/out || fail "stats: no open session"
ctl 0 stats --json
has $t/out "\"server\": true"

# --- close, and the events ----------------------------------------------------
echo close >&3
wait_for $t/hold.out "CLOSED $id"
wait_for $t/events.txt "closed session $id "
has $t/events.txt "opened session $id pid "
has $t/events.txt " comm h_vgpuctl sq 64 cq 128 arena 1M"
wait $ev_json || fail "events --count 2 exited $?"
has $t/events.json "{\"event\": \"opened\", \"id\": $id, "
has $t/events.json "{\"event\": \"closed\", \"id\": $id, "
[ "$(wc -l <$t/events.json)" -eq 2 ] || fail "events --count 2 printed more than 2"
kill -INT $ev_txt
wait $ev_txt || fail "events exited $? on SIGINT, want 0"
pids=$hold
echo "events:"
cat $t/events.txt

# --- kill -------------------------------------------------------------------
echo open >&3
for _ in $(seq 100); do
	[ "$(grep -c '^SESSION' $t/hold.out)" -eq 2 ] && break
	sleep 0.1
done
id2=$(awk '/^SESSION/ { v = $2 } END { print v }' $t/hold.out)
[ "$id2" != "$id" ] || fail "no second session"
ctl 0 kill "$id2"
ctl 0 sessions --module "$id2"
awk -v id="$id2" '$1 == id && $5 == "dead" { ok = 1 } END { exit !ok }' $t/out ||
	fail "session $id2 not dead after kill: $(cat $t/out)"
ctl 1 kill 999999
has $t/err "no session 999999"

# --- unprivileged -----------------------------------------------------------
nobody() {
	h_vgpuctl as 65534 vgpuctl "$@" >$t/out 2>$t/err
}
nobody kill "$id2"
[ $? -eq 1 ] || fail "kill as nobody did not fail"
has $t/err "CAP_NET_ADMIN"
nobody sessions || fail "sessions as nobody failed"
has $t/out "no sessions"	# the root-owned sessions are hidden
nobody stats || fail "stats as nobody failed"
# Kernels before 6.6 (and older 6.1.y) let anyone join; then there is no error.
timeout 2 h_vgpuctl as 65534 vgpuctl events >$t/out 2>$t/err
rc=$?
if [ $rc -eq 1 ]; then
	has $t/err "needs CAP_NET_ADMIN"
	echo "events as nobody: $(cat $t/err)"
else
	echo "events as nobody: allowed by this kernel (rc $rc)"
fi

echo close >&3
wait_for $t/hold.out "CLOSED $id2"
exec 3>&-
wait $hold || fail "h_vgpuctl serve exited $?"
ctl 0 sessions --module
echo "t_vgpuctl: ok"
