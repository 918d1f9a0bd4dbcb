# SPDX-License-Identifier: MIT
# The CUDA driver export surface of libvgpu.so: every driver symbol (weak
# defaults, runtime/exports/exports_gen.c) and cuGetProcAddress (runtime/exports/procaddr.c
# with the generated runtime/exports/procaddr_table.h). Included by the top-level
# Makefile; every variable can be set before the include.
#
#   make regen-exports    rebuild the generated files from the CUDA toolkit
#   make check-exports    fail if they differ from what the toolkit gives now
#   make test-procaddr    build and run tests/unit/test_procaddr
#   make test-exports     check $(LIBVGPU)'s dynamic symbols against the stub
#   make procaddr-probe   build tests/gpu/procaddr_probe (GPU machine: run it)

CUDA_HOME ?= /usr/local/cuda
VGPU_CUDA_STUB ?= $(CUDA_HOME)/lib64/stubs/libcuda.so
PYTHON3 ?= python3
VGPU_BUILD ?= build
LIBVGPU ?= $(VGPU_BUILD)/libvgpu.so
EXPORTS_CFLAGS ?= -std=gnu11 -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE \
	-I include $(COMMON_INC) $(RUNTIME_INC) -I $(CUDA_HOME)/include

# Sources for libvgpu.so. Link them as objects, not through an archive: the
# linker pulls no archive member to replace a weak definition. Every strong
# definition of a driver symbol elsewhere must be VGPU_EXPORT, or the hidden
# one wins and the symbol drops out of the export list (test-exports says so).
EXPORTS_SRCS := runtime/exports/exports_gen.c runtime/exports/procaddr.c runtime/exports/unsupported.c
EXPORTS_GENERATED := runtime/exports/exports_gen.c runtime/exports/procaddr_table.h
EXPORTS_DEPS := $(EXPORTS_GENERATED) runtime/exports/unsupported.h runtime/session/driver.h

GEN_EXPORTS = $(PYTHON3) tools/gen-exports --stub $(VGPU_CUDA_STUB) --include $(CUDA_HOME)/include

.PHONY: regen-exports check-exports test-procaddr test-exports procaddr-probe

regen-exports:
	$(GEN_EXPORTS) -v

check-exports:
	@tmp=$$(mktemp -d) || exit 1; \
	$(GEN_EXPORTS) --out $$tmp >/dev/null && \
	diff -u runtime/exports/exports_gen.c $$tmp/runtime/exports/exports_gen.c && \
	diff -u runtime/exports/procaddr_table.h $$tmp/runtime/exports/procaddr_table.h; \
	rc=$$?; rm -rf $$tmp; \
	[ $$rc -eq 0 ] || echo "generated export files are stale: make regen-exports"; exit $$rc

$(VGPU_BUILD)/tests/unit/test_procaddr: tests/unit/test_procaddr.c $(EXPORTS_SRCS) common/log.c $(EXPORTS_DEPS)
	@mkdir -p $(@D)
	$(CC) $(EXPORTS_CFLAGS) -o $@ $(filter %.c,$^) -lpthread

test-procaddr: $(VGPU_BUILD)/tests/unit/test_procaddr
	$<

test-exports: $(LIBVGPU)
	sh tests/unit/test_exports.sh $(LIBVGPU) $(VGPU_CUDA_STUB)

$(VGPU_BUILD)/tests/gpu/procaddr_probe: tests/gpu/procaddr_probe.c $(EXPORTS_SRCS) common/log.c $(EXPORTS_DEPS)
	@mkdir -p $(@D)
	$(CC) $(EXPORTS_CFLAGS) -O1 -o $@ $(filter %.c,$^) -ldl -lpthread

procaddr-probe: $(VGPU_BUILD)/tests/gpu/procaddr_probe
