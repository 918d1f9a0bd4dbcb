#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
# End-to-end over /dev/vgpu in the QEMU guest (busybox sh, root). tests/kmod/run
# puts vgpud, the runtime (/opt/vgpu) and the e2e programs (/opt/vgpu/e2e) in
# the guest and lists one line per step:
#
#   e2e.sh start             vgpud --backend host, registered as the server
#   e2e.sh run PROG [ARGS]   PROG through vgpu with VGPU_TRANSPORT=kmod
#   e2e.sh stop_restore      vgpuctl checkpoint --stop, then restore, of a
#                            session over /dev/vgpu
#   e2e.sh move              a session over /dev/vgpu moved, then checkpointed
#                            and restored through cuCheckpointProcess* by
#                            another process (ckpt_api_driver)
#   e2e.sh memfd PROG        the same with VGPU_TRANSPORT=memfd, module loaded
#   e2e.sh auto PROG         no VGPU_TRANSPORT: must pick /dev/vgpu
#   e2e.sh refuse            the daemon's checks of a /dev/vgpu hello (h_e2e)
#   e2e.sh pinned            pageable copies through pinned registrations
#                            (h_pincopy): right bytes, registrations reused,
#                            stale ones replaced; the module's counters at
#                            zero once the client is gone
#   e2e.sh pinned_limit      the same without CAP_IPC_LOCK under a tiny
#                            RLIMIT_MEMLOCK: staged, right, refusal logged once
#   e2e.sh pinned_bad        bad pinned-copy entries from a hand-made client
#                            (h_pinbad) fail, and the worker keeps serving
#   e2e.sh parallel          four clients at once, all over /dev/vgpu
#   e2e.sh isolation         an illegal address in one client while another
#                            copies: the error to the first, the second unharmed
#   e2e.sh death N           N clients killed with SIGKILL mid-copy: each time
#                            the next client is served, and at the end the
#                            daemon holds no more descriptors than before
#   e2e.sh container PROG    PROG in a new user and mount namespace whose
#                            /dev holds only vgpu (and the daemon's socket
#                            folder), through /dev/vgpu
#   e2e.sh stop              vgpud stops; nothing in its log went wrong
#
# Exit 0 pass, 1 fail, 77 skip.
set -u
V=/opt/vgpu
SOCK=/run/vgpu/vgpud.sock
LOG=/tmp/vgpud.log
PIDF=/tmp/vgpud.pid
OUT=/tmp/e2e.out

fail() {
	echo "e2e: FAIL: $*"
	[ -s $OUT ] && { echo "--- program output"; tail -n 30 $OUT; }
	echo "--- vgpud log"
	tail -n 20 $LOG
	exit 1
}

[ -x $V/bin/vgpud ] || { echo "no vgpud in the guest"; exit 77; }

# The daemon's log lines about a client: "serving pid P (...) ... over X".
served_over() { # PID: the carrier the worker served the pid over
	sed -n "s/.*serving pid $1 (.*) on the host backend over \([^ ]*\).*/\1/p" $LOG | tail -n 1
}

# through TRANSPORT PROG ARGS...: one program, checked for its carrier.
through() {
	want=$1
	shift
	: >$OUT
	if [ "$want" = auto ]; then
		unset VGPU_TRANSPORT
		want=/dev/vgpu
	else
		export VGPU_TRANSPORT=$want
		[ "$want" = kmod ] && want=/dev/vgpu
	fi
	$V/bin/vgpu run --socket $SOCK -- "$@" >$OUT 2>&1 &
	pid=$!	# vgpu run execs the program: this is the client
	wait $pid
	rc=$?
	[ $rc -eq 0 ] || fail "$* exited $rc"
	got=$(served_over $pid)
	[ "$got" = "$want" ] || fail "$* was served over '$got', want $want"
	echo "e2e: $* passed over $got"
}

# background PROG ARGS...: through /dev/vgpu in the background; its pid in $bg.
background() {
	VGPU_TRANSPORT=kmod $V/bin/vgpu run --socket $SOCK -- "$@" &
	bg=$!
}

# until_copying FILE PID: wait (60 s at most) for "copying" in FILE.
until_copying() {
	i=0
	while ! grep -q copying "$1" 2>/dev/null && [ $i -lt 600 ]; do
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	grep -q copying "$1"
}

case ${1:-} in
parallel)
	pids=""
	for n in 1 2 3 4; do
		background $V/e2e/kernels >/tmp/par.$n 2>&1
		pids="$pids $bg"
	done
	for p in $pids; do
		wait "$p" || fail "one of four parallel clients failed"
		[ "$(served_over "$p")" = /dev/vgpu ] || fail "a parallel client was not served over /dev/vgpu"
	done
	echo "e2e: four clients at once over /dev/vgpu"
	;;
isolation)
	background $V/e2e/client loop 4 >/tmp/iso.loop 2>&1
	lpid=$bg
	until_copying /tmp/iso.loop $lpid || fail "the copying client never started"
	VGPU_TRANSPORT=kmod $V/bin/vgpu run --socket $SOCK -- $V/e2e/client poke >$OUT 2>&1 ||
		fail "the erring client did not get its illegal-address error"
	wait $lpid || { cat /tmp/iso.loop; fail "the copying client was harmed"; }
	echo "e2e: an illegal address in one client, the other copied on"
	;;
death)
	dpid=$(cat $PIDF)
	fd0=$(ls /proc/$dpid/fd | wc -l)
	n=0
	while [ $n -lt "${2:-5}" ]; do
		n=$((n + 1))
		background $V/e2e/client loop 60 >/tmp/death.out 2>&1
		until_copying /tmp/death.out $bg || fail "round $n: the client never started copying"
		sleep 0.$((n % 3))
		kill -KILL $bg
		wait $bg 2>/dev/null
		through kmod $V/e2e/kernels >/dev/null || fail "round $n: the next client failed"
	done
	sleep 1	# the supervisor reaps the last worker and refills its pool
	fd1=$(ls /proc/$dpid/fd | wc -l)
	[ "$fd1" -le "$fd0" ] || fail "vgpud holds $fd1 descriptors, $fd0 before the kills"
	echo "e2e: $n clients killed mid-copy; the next one served each time; vgpud's descriptors $fd0 -> $fd1"
	;;
start)
	mkdir -p /run/vgpu
	VGPU_HOST_DEVICE_MEM=536870912 VGPU_LOG=info $V/bin/vgpud --backend host \
		--foreground --socket $SOCK --workers 1 </dev/null >$LOG 2>&1 &
	echo $! >$PIDF
	i=0
	while ! [ -S $SOCK ] && [ $i -lt 600 ]; do
		kill -0 "$(cat $PIDF)" 2>/dev/null || fail "vgpud exited"
		sleep 0.1
		i=$((i + 1))
	done
	[ -S $SOCK ] || fail "vgpud did not listen in 60 s"
	grep -q "registered as the /dev/vgpu server" $LOG ||
		fail "vgpud did not register as the /dev/vgpu server"
	echo "e2e: vgpud $(cat $PIDF) is the /dev/vgpu server"
	;;
run)
	shift
	through kmod "$V/e2e/$@"
	;;
move)
	# A session over /dev/vgpu moved to another worker (vgpuctl migrate),
	# then locked, checkpointed, restored and unlocked by another process
	# (cuCheckpointProcess*): each time a new worker maps the module's
	# rings; the program finds its memory and its kernel after both.
	rm -f /tmp/move.go
	background $V/e2e/ckpt_api_driver target /tmp/move.go >/tmp/move.out 2>&1
	i=0
	while ! grep -q '^ready$' /tmp/move.out 2>/dev/null && [ $i -lt 600 ]; do
		kill -0 $bg 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	grep -q '^ready$' /tmp/move.out || fail "the program did not start: $(tail -n 3 /tmp/move.out)"
	[ "$(served_over $bg)" = /dev/vgpu ] || fail "the program is not served over /dev/vgpu"
	id=$(vgpuctl sessions --socket $SOCK | awk -v p=$bg '$2 == p { print $1 }')
	[ -n "$id" ] || fail "the session is not listed"
	i=0
	until vgpuctl migrate "$id" --socket $SOCK >/tmp/move.ctl 2>&1; do
		i=$((i + 1))	# the pool's second worker may still be starting
		[ $i -lt 20 ] && grep -q "no idle worker" /tmp/move.ctl ||
			fail "migrate: $(cat /tmp/move.ctl)"
		sleep 0.5
	done
	$V/bin/vgpu run --socket $SOCK -- $V/e2e/ckpt_api_driver tool $bg all >/tmp/move.tool 2>&1 ||
		fail "the process-checkpoint API: $(grep -E 'FAIL|FATAL' /tmp/move.tool | head -n 3)"
	touch /tmp/move.go
	wait $bg || fail "the program after the move and the restore: $(tail -n 3 /tmp/move.out)"
	n=$(grep -c 'taken up from .* (over /dev/vgpu)' $LOG)
	[ "$n" -ge 2 ] || fail "$n take-ups over /dev/vgpu in vgpud's log, want 2"
	echo "e2e: over /dev/vgpu: moved, then checkpointed and restored by another process ($(grep ' ms$' /tmp/move.tool | tr '\n' ' '))"
	;;
stop_restore)
	# vgpuctl checkpoint --stop of a session over /dev/vgpu: its worker
	# goes, the program holds the module's session and waits; vgpuctl
	# restore of the file: the program comes back (a worker attaches the
	# same /dev/vgpu session) and finds its memory and its kernel.
	rm -f /tmp/stop.go /tmp/stop.vgc
	background $V/e2e/ckpt_api_driver target /tmp/stop.go >/tmp/stop.out 2>&1
	i=0
	while ! grep -q '^ready$' /tmp/stop.out 2>/dev/null && [ $i -lt 600 ]; do
		kill -0 $bg 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	grep -q '^ready$' /tmp/stop.out || fail "the program did not start: $(tail -n 3 /tmp/stop.out)"
	id=$(vgpuctl sessions --socket $SOCK | awk -v p=$bg '$2 == p { print $1 }')
	[ -n "$id" ] || fail "the session is not listed"
	vgpuctl checkpoint "$id" -o /tmp/stop.vgc --stop --socket $SOCK >/tmp/stop.ctl 2>&1 ||
		fail "checkpoint --stop: $(cat /tmp/stop.ctl)"
	touch /tmp/stop.go	# the program's next calls wait for the restore
	i=0
	until vgpuctl restore /tmp/stop.vgc --socket $SOCK >/tmp/stop.ctl 2>&1; do
		i=$((i + 1))	# its worker may still be ending
		[ $i -lt 20 ] && grep -q "is running" /tmp/stop.ctl || fail "restore: $(cat /tmp/stop.ctl)"
		sleep 0.5
	done
	wait $bg || fail "the program after the restore: $(tail -n 3 /tmp/stop.out)"
	grep -q 'taken up from /tmp/stop.vgc .*(over /dev/vgpu)' $LOG ||
		fail "no take-up over /dev/vgpu in vgpud's log"
	echo "e2e: over /dev/vgpu: stopped into a file, restored from it; the program went on"
	;;
memfd)
	through memfd "$V/e2e/$2"
	;;
auto)
	through auto "$V/e2e/$2"
	;;
refuse)
	h_e2e $SOCK >$OUT 2>&1 || fail "h_e2e"
	cat $OUT
	grep -q "names /dev/vgpu session .* refused" $LOG ||
		fail "the daemon did not log the foreign session id"
	;;
pinned)
	export VGPU_LOG=debug
	through kmod $V/e2e/h_pincopy
	unset VGPU_LOG
	regs=$(grep -c "pinreg: registered" $OUT)
	reused=$(grep -c "pinreg: reusing" $OUT)
	stale=$(grep -c "is stale; registering again" $OUT)
	[ "$regs" -ge 1 ] || fail "no pinned registration"
	[ "$reused" -ge 1 ] || fail "no registration reused"
	[ "$stale" -ge 3 ] || fail "$stale stale registrations replaced, want 3 or more"
	grep -q "refused to pin" $OUT && fail "a pin was refused"
	grep -q "pinned region .* mapped" $LOG || fail "the worker mapped no pinned region"
	grep '^h_pincopy' $OUT
	echo "e2e: $regs registrations, $reused reuses, $stale stale ones replaced"
	h_pinbad --zero || fail "regions or pinned pages left in the module"
	;;
pinned_limit)
	export VGPU_LOG=debug VGPU_PIN_CACHE_MB=64
	through kmod $V/e2e/h_pincopy limit
	unset VGPU_LOG VGPU_PIN_CACHE_MB
	refused=$(grep -c "refused to pin" $OUT)
	[ "$refused" -eq 1 ] || fail "the refusal was logged $refused times, want once"
	grep -q "pinreg: registered" $OUT && fail "a registration went past RLIMIT_MEMLOCK"
	grep '^h_pincopy' $OUT
	h_pinbad --zero || fail "regions or pinned pages left in the module"
	;;
pinned_bad)
	: >$OUT
	h_pinbad $SOCK >$OUT 2>&1 || fail "h_pinbad"
	cat $OUT
	kill -0 "$(cat $PIDF)" || fail "vgpud is gone"
	h_pinbad --zero || fail "regions or pinned pages left in the module"
	# The daemon still serves others.
	through kmod $V/e2e/kernels
	;;
container)
	ct=/tmp/ct
	mkdir -p $ct
	: >$OUT
	# As mapped root in a new user namespace: a tmpfs root with the
	# libraries and programs bound read-only in, and of /dev only vgpu.
	VGPU_TRANSPORT=kmod unshare -r -m sh -c "
		set -e
		mount -t tmpfs ct $ct
		mkdir -p $ct/dev $ct/run/vgpu $ct/proc $ct/tmp $ct/bin $ct/lib $ct/lib64 $ct/usr $ct/opt
		touch $ct/dev/vgpu
		mount --bind /dev/vgpu $ct/dev/vgpu
		mount --bind /run/vgpu $ct/run/vgpu
		for d in bin lib lib64 usr opt proc; do mount --rbind /\$d $ct/\$d; done
		[ \"\$(ls $ct/dev)\" = vgpu ]
		[ \"\$(id -u)\" = 0 ]
		[ \"\$(readlink /proc/self/ns/user)\" != \"$(readlink /proc/self/ns/user)\" ]
		exec chroot $ct $V/bin/vgpu run --socket $SOCK -- $V/e2e/$2
	" >$OUT 2>&1 &
	pid=$!
	wait $pid
	rc=$?
	[ $rc -eq 0 ] || fail "$2 in the container exited $rc"
	got=$(served_over $pid)
	[ "$got" = /dev/vgpu ] || fail "the container's client was served over '$got'"
	echo "e2e: $2 passed in a user+mount namespace over /dev/vgpu"
	;;
stop)
	pid=$(cat $PIDF 2>/dev/null)
	[ -n "$pid" ] || fail "no vgpud was started"
	kill -TERM "$pid"
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -0 "$pid" 2>/dev/null && fail "vgpud did not stop on SIGTERM"
	if grep "error:" $LOG; then
		fail "vgpud logged errors"
	fi
	echo "e2e: vgpud stopped; $(grep -c 'over /dev/vgpu' $LOG) sessions over /dev/vgpu, $(grep -c 'over memfd' $LOG) over memfd"
	;;
*)
	echo "usage: e2e.sh start|run PROG|memfd PROG|auto PROG|refuse|pinned|pinned_limit|pinned_bad|parallel|isolation|death N|container PROG|stop" >&2
	exit 2
	;;
esac
exit 0
