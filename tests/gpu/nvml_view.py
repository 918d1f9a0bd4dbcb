#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pynvml (nvidia-ml-py) through `vgpu run`: vgpu's NVML shows the tenant's
view. Run by tests/gpu/run while a CUDA program of the same user (PID, the
first argument) holds memory through vgpu.

Checks: a device with a name, a UUID and memory; PID among the compute
processes with memory; memory used > 0 and exactly what the listed
processes hold (the tenant's sessions, not the device's use: vgpud's own
workers hold contexts that the device's figure would count); the driver
and CUDA versions; utilization answers NOT_SUPPORTED (the tenant's share
is not measured yet). Exit 0 pass, 1 fail, 77 without pynvml.
"""
import os
import sys

try:
    import pynvml
except ImportError:
    print("skip: no pynvml (pip install nvidia-ml-py)")
    sys.exit(77)

failures = 0


def check(ok, what):
    global failures
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        failures += 1


def text(s):
    return s.decode() if isinstance(s, bytes) else s


def main():
    holder = int(sys.argv[1])
    pynvml.nvmlInit()
    n = pynvml.nvmlDeviceGetCount()
    check(n >= 1, "devices: %d" % n)
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    name = text(pynvml.nvmlDeviceGetName(h))
    uuid = text(pynvml.nvmlDeviceGetUUID(h))
    check(bool(name), "name: %s" % name)
    check(uuid.startswith("GPU-"), "UUID: %s" % uuid)
    mem = pynvml.nvmlDeviceGetMemoryInfo(h)
    procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
    pids = {p.pid: p.usedGpuMemory for p in procs}
    print("memory: total %d used %d free %d; processes %s" % (mem.total, mem.used, mem.free, pids))
    check(mem.total > 0 and mem.used + mem.free == mem.total, "memory adds up")
    check(holder in pids and (pids[holder] or 0) > 0, "the holder %d is listed with memory" % holder)
    check(mem.used > 0, "memory used > 0")
    check(mem.used == sum(v or 0 for v in pids.values()),
          "memory used is the tenant's sessions' (%d), not the device's" % sum(v or 0 for v in pids.values()))
    check(pynvml.nvmlSystemGetCudaDriverVersion() >= 12000, "CUDA driver version")
    try:
        driver = text(pynvml.nvmlSystemGetDriverVersion())
    except pynvml.NVMLError as e:
        driver = "(%s)" % e
    # A driver version where NVIDIA's driver is (the GPU machine); none on
    # the host backend's dry run.
    if os.path.exists("/proc/driver/nvidia/version"):
        check("." in driver, "driver version: %s" % driver)
    else:
        check(driver == "(Not Supported)", "no driver version without a driver: %s" % driver)
    try:
        pynvml.nvmlDeviceGetUtilizationRates(h)
        check(False, "utilization answers NOT_SUPPORTED")
    except pynvml.NVMLError as e:
        check(e.value == pynvml.NVML_ERROR_NOT_SUPPORTED, "utilization answers NOT_SUPPORTED")
    pynvml.nvmlShutdown()
    return 1 if failures else 0


sys.exit(main())
