#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
# /init of the throwaway guest that tests/kmod/run boots. Loads vgpu.ko, runs
# every test in /tests/list with a timeout, fails a test that leaves a kernel
# warning in dmesg, unloads the module and prints the success marker only if
# everything passed. Output lines: "PASS name", "FAIL name (why)", "SKIP name".
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=/lib:/usr/lib:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mkdir -p /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup
dmesg -n 1

TEST_TIMEOUT=${TEST_TIMEOUT:-120}
only=$(sed -n 's/.*vgpu_tests=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')
passed=0
failed=0

bad_dmesg() {
	dmesg | tail -n +"$1" | grep -E 'WARNING|BUG|Oops|Call Trace|general protection|INFO: task|RIP:'
}

# run NAME CMD...: one test, exit 0 pass / 77 skip / else fail.
run() {
	name=$1
	shift
	if [ -n "$only" ] && ! echo " $only " | grep -q " $name "; then
		return
	fi
	mark=$(($(dmesg | wc -l) + 1))
	start=$(cut -d' ' -f1 /proc/uptime)
	timeout -s KILL "$TEST_TIMEOUT" "$@" </dev/null >/tmp/out 2>&1
	rc=$?
	end=$(cut -d' ' -f1 /proc/uptime)
	secs=$(echo "$start $end" | awk '{printf "%.1f", $2 - $1}')
	if bad_dmesg "$mark" >/tmp/dmesg; then
		echo "FAIL $name (kernel warning, ${secs}s)"
		cat /tmp/out /tmp/dmesg
		dmesg | tail -n +"$mark" | head -60
		failed=$((failed + 1))
	elif [ $rc -eq 0 ]; then
		echo "PASS $name (${secs}s)"
		sed 's/^/    /' /tmp/out
		passed=$((passed + 1))
	elif [ $rc -eq 77 ]; then
		echo "SKIP $name"
		cat /tmp/out
	else
		echo "FAIL $name (rc $rc, ${secs}s)"
		cat /tmp/out
		failed=$((failed + 1))
	fi
}

if insmod /vgpu.ko; then
	echo "PASS insmod"
	passed=$((passed + 1))
else
	echo "FAIL insmod"
	failed=$((failed + 1))
fi

# The module's own tests, then the suites tests/kmod/run adds through
# VGPU_KMOD_EXTRA_TESTS (end-to-end over /dev/vgpu, containers with unshare):
# each line of /tests/list is "name command args...".
while read -r name cmd; do
	[ -n "$name" ] || continue
	# shellcheck disable=SC2086
	run "$name" $cmd
done </tests/list

# Last: every session, server and worker fd is gone, so the module unloads.
mark=$(($(dmesg | wc -l) + 1))
ok=0
for _ in 1 2 3 4 5; do
	rmmod vgpu 2>/tmp/out && ok=1 && break
	sleep 1
done
if [ $ok -eq 1 ] && ! bad_dmesg "$mark" >/dev/null; then
	echo "PASS rmmod"
	passed=$((passed + 1))
else
	echo "FAIL rmmod"
	cat /tmp/out
	failed=$((failed + 1))
fi

echo "guest: $passed passed, $failed failed"
[ $failed -eq 0 ] && echo "VGPU-KMOD-SUCCESS"
poweroff -f
