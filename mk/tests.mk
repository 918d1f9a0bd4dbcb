# SPDX-License-Identifier: MIT
# Test programs and the suites; the top-level Makefile includes this fragment.
#
#   make test        everything CI runs: unit tests, then end-to-end on the
#                    host backend (tests/run)
#   make unit        the unit tests only
#   make e2e         the end-to-end suite only (tests/e2e/run)
#   make e2e-bins    build the end-to-end programs into build/tests/e2e/
#   make gpu-bins    build the GPU suite's programs (build/tests/gpu/) and the
#                    benchmarks (build/bench/) for NVCC_GPU_ARCH (sm_90); needs
#                    no liburing: tests/gpu/run uses it on the GPU machine
#   make bench-bins  the benchmarks only
#
# End-to-end programs are built the way users build theirs: plain nvcc, the
# default static CUDA runtime, default fatbin (nvcc 13 compresses only the
# PTX entries; the host backend reads compressed entries and the SASS), no
# -arch: nvcc's default target. One is also built with -cudart shared.

NVCC_WARN ?= -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings
NVCC_FLAGS ?= -O2 -std=c++17 $(NVCC_WARN)
NVCC_ARCH ?=
NVCC_GPU_ARCH ?= -arch=sm_90
CUDA_LIB64 := $(CUDA_HOME)/lib64
CUDA_RPATH := -Xlinker -rpath,$(CUDA_LIB64)
DRIVER_LIBS := -L$(CUDA_LIB64)/stubs -lcuda
HOST_CUDA_CFLAGS := -std=gnu11 -O2 $(WARN) -D_GNU_SOURCE -I $(CUDA_HOME)/include

E2E_OUT := $(B)/tests/e2e
E2E_PROGS := memory kernels streams errors threads client launch_first samples_misc
E2E_HDRS := tests/e2e/e2e.h tests/e2e/kernels.cuh
E2E_DRIVER_SRCS := $(wildcard tests/e2e/*.c)
E2E_BINS := $(addprefix $(E2E_OUT)/,$(E2E_PROGS) kernels_shared) \
	$(patsubst tests/e2e/%.c,$(E2E_OUT)/%,$(E2E_DRIVER_SRCS))
# Clients without the runtime (tests/e2e/raw/): the wire protocol by hand,
# against include/vgpu/proto.h and common/ring.c.
E2E_RAW_BINS := $(patsubst tests/e2e/raw/%.c,$(E2E_OUT)/%,$(wildcard tests/e2e/raw/*.c))
E2E_RAW_SRCS := common/ring.c common/kmod.c common/fdpass.c common/log.c
E2E_BINS += $(E2E_RAW_BINS)

.PHONY: e2e-bins gpu-bins bench-bins unit e2e test

e2e-bins: $(E2E_BINS)

$(E2E_OUT)/%: tests/e2e/%.cu $(E2E_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_ARCH) -o $@ $<

$(E2E_OUT)/kernels_shared: tests/e2e/kernels.cu $(E2E_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_ARCH) -cudart shared $(CUDA_RPATH) -o $@ $<

$(E2E_RAW_BINS): $(E2E_OUT)/%: tests/e2e/raw/%.c $(E2E_RAW_SRCS) include/vgpu/proto.h common/ring.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -o $@ $< $(E2E_RAW_SRCS) -lpthread

# Driver-API programs (tests/e2e/*.c): gcc against the toolkit's stub.
$(E2E_OUT)/%: tests/e2e/%.c tests/e2e/driver_check.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CUDA_CFLAGS) -o $@ $< $(DRIVER_LIBS) -lpthread

# vgpu's NVML, linked as programs link NVIDIA's (-lnvidia-ml): the build's.
NVML_TEST_FLAGS = -I runtime/nvml $(NVML_LIB) $(DRIVER_LIBS)
$(E2E_OUT)/nvml_driver: tests/e2e/nvml_driver.c runtime/nvml/vgpu_nvml.h $(NVML_LIB)
	@mkdir -p $(@D)
	$(CC) $(HOST_CUDA_CFLAGS) -o $@ $< $(NVML_TEST_FLAGS)

# ---- GPU suite ----------------------------------------------------------
GPU_OUT := $(B)/tests/gpu
# One .cu, one program; tmpl_* and rdc_* are two-unit programs.
GPU_SINGLE := $(filter-out tmpl_% rdc_% sgemm,$(patsubst tests/gpu/%.cu,%,$(wildcard tests/gpu/*.cu)))
GPU_BINS := $(addprefix $(GPU_OUT)/,$(GPU_SINGLE) tmpl rdc sgemm jit_ptx) \
	$(addprefix $(GPU_OUT)/e2e/,$(E2E_PROGS) kernels_shared) \
	$(patsubst tests/e2e/%.c,$(GPU_OUT)/e2e/%,$(E2E_DRIVER_SRCS)) \
	$(patsubst tests/e2e/raw/%.c,$(GPU_OUT)/e2e/%,$(wildcard tests/e2e/raw/*.c))
GPU_HDRS := $(E2E_HDRS) tests/gpu/tmpl.cuh
GPU_BINS += $(GPU_OUT)/export_tables $(GPU_OUT)/ckpt_api

gpu-bins: $(GPU_BINS) bench-bins

$(GPU_OUT)/%: tests/gpu/%.cu $(GPU_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_GPU_ARCH) -o $@ $<

$(GPU_OUT)/tmpl: tests/gpu/tmpl_main.cu tests/gpu/tmpl_kern.cu $(GPU_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_GPU_ARCH) -o $@ $(filter %.cu,$^)

$(GPU_OUT)/rdc: tests/gpu/rdc_main.cu tests/gpu/rdc_dev.cu $(GPU_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_GPU_ARCH) -rdc=true -o $@ $(filter %.cu,$^)

$(GPU_OUT)/sgemm: tests/gpu/sgemm.cu $(GPU_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_GPU_ARCH) $(CUDA_RPATH) -o $@ $< -lcublas

$(GPU_OUT)/jit_ptx: tests/gpu/jit_ptx.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CUDA_CFLAGS) -o $@ $< $(DRIVER_LIBS)

$(GPU_OUT)/ckpt_api: tests/gpu/ckpt_api.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CUDA_CFLAGS) -o $@ $< $(DRIVER_LIBS)

# The hidden tables against the driver's (plain C, -lcuda; dlsym for vgpu's own).
$(GPU_OUT)/export_tables: tests/gpu/export_tables.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CUDA_CFLAGS) -o $@ $< $(DRIVER_LIBS) -ldl

$(GPU_OUT)/e2e/%: tests/e2e/%.cu $(E2E_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_GPU_ARCH) -o $@ $<

$(GPU_OUT)/e2e/kernels_shared: tests/e2e/kernels.cu $(E2E_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_GPU_ARCH) -cudart shared $(CUDA_RPATH) -o $@ $<

$(GPU_OUT)/e2e/%: tests/e2e/%.c tests/e2e/driver_check.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CUDA_CFLAGS) -o $@ $< $(DRIVER_LIBS) -lpthread

$(GPU_OUT)/e2e/nvml_driver: tests/e2e/nvml_driver.c runtime/nvml/vgpu_nvml.h $(NVML_LIB)
	@mkdir -p $(@D)
	$(CC) $(HOST_CUDA_CFLAGS) -o $@ $< $(NVML_TEST_FLAGS)

$(GPU_OUT)/e2e/%: tests/e2e/raw/%.c $(E2E_RAW_SRCS) include/vgpu/proto.h common/ring.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -o $@ $< $(E2E_RAW_SRCS) -lpthread

# ---- benchmarks ---------------------------------------------------------
BENCH_OUT := $(B)/bench
BENCH_BINS := $(patsubst bench/%.cu,$(BENCH_OUT)/%,$(wildcard bench/*.cu)) \
	$(patsubst bench/%.c,$(BENCH_OUT)/%,$(wildcard bench/*.c))

bench-bins: $(BENCH_BINS)

$(BENCH_OUT)/%: bench/%.cu bench/bench.h
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_GPU_ARCH) -o $@ $<

$(BENCH_OUT)/%: bench/%.c bench/bench.h
	@mkdir -p $(@D)
	$(CC) $(HOST_CUDA_CFLAGS) -o $@ $< $(DRIVER_LIBS)

# ---- suites -------------------------------------------------------------
unit: all $(UNIT)/test_procaddr
	VGPU_TEST_NO_BUILD=1 tests/run --unit

e2e: all e2e-bins
	VGPU_TEST_NO_BUILD=1 tests/e2e/run

test: all $(UNIT)/test_procaddr e2e-bins
	VGPU_TEST_NO_BUILD=1 tests/run

# The unit-test programs the Makefile knows (tests/run runs each).
.PHONY: print-unit-bins
print-unit-bins:
	@echo $(UNIT_BINS)
