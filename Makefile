# SPDX-License-Identifier: MIT
# vgpu: user space (runtime, daemon, tools, tests). The kernel module is
# built by Kbuild (make module); see mk/kmod.mk.
#
#   make              build everything into build/
#   make test         the whole test suite (what CI runs)
#   make install      PREFIX=/usr/local DESTDIR=
#   make demo         build, start vgpud, run an example through it

PREFIX ?= /usr/local
DESTDIR ?=
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(CUDA_HOME)/bin/nvcc
CC ?= gcc
B := build
VGPU_BUILD := $(B)

WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
# Sources live in folders by concern (README: "Layout"); headers are found
# by name in their folder's tree, so a file moved between folders keeps its
# includes.
dirs_of = $(sort $(patsubst %/,%,$(dir $(shell find $(1) -name '*.[ch]'))))
COMMON_INC := $(addprefix -I ,$(call dirs_of,common))
DAEMON_INC := $(addprefix -I ,$(call dirs_of,daemon))
RUNTIME_INC := $(addprefix -I ,$(call dirs_of,runtime))
CPPFLAGS_ALL := -D_GNU_SOURCE -I include $(COMMON_INC) -I $(CUDA_HOME)/include
CFLAGS_ALL := -std=gnu11 $(WARN) -fPIC $(CFLAGS)
LIBURING := -Wl,-Bstatic -luring -Wl,-Bdynamic

COMMON_SRCS := common/log.c common/ring.c common/fdpass.c common/kmod.c common/dial.c
# runtime/nvml/ is libnvidia-ml.so.1's (mk/nvml.mk), not libvgpu.so's.
RUNTIME_SRCS := $(filter-out runtime/nvml/%,$(shell find runtime -name '*.c'))
DAEMON_SRCS := $(filter-out daemon/main.c,$(shell find daemon -name '*.c'))
# The host backend, which unit tests and fuzz harnesses link on their own.
HOST_BACKEND_SRCS := $(shell find daemon/backend/host -name '*.c') daemon/backend/backend_gen.c
# Checkpoint files (include/vgpu/ckpt.h): the daemon writes them, vgpuctl reads them.
CKPT_SRCS := common/ckpt/ckpt_file.c common/ckpt/ckpt_crc.c common/ckpt/ckpt_io.c common/ckpt/ckpt_zstd.c \
	common/ckpt/ckpt_write.c common/ckpt/ckpt_read.c common/ckpt/ckpt_chain.c

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

RUNTIME_LIB := $(B)/lib/vgpu/libvgpu.so
NVML_LIB := $(B)/lib/vgpu/libnvidia-ml.so.1
VGPUD := $(B)/bin/vgpud
VGPU := $(B)/bin/vgpu
LIBVGPU := $(RUNTIME_LIB)

.PHONY: all clean install test demo unit e2e
VGPU_CKPT := $(B)/bin/vgpu-ckpt

all: $(RUNTIME_LIB) $(B)/lib/vgpu/libcuda.so.1 $(NVML_LIB) $(VGPUD) $(VGPU) $(VGPU_CKPT) vgpuctl unit-bins

# Objects: the runtime hides everything but the driver's entry points.
$(B)/obj/runtime/%.o: runtime/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(RUNTIME_INC) $(CFLAGS_ALL) -fvisibility=hidden -MMD -MP -c -o $@ $<

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(DAEMON_INC) $(RUNTIME_INC) $(CFLAGS_ALL) -MMD -MP -c -o $@ $<

# Hidden copies of common/ for the runtime, so nothing of ours leaks into
# the program's namespace.
$(B)/obj/rt-common/%.o: common/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -fvisibility=hidden -MMD -MP -c -o $@ $<

RUNTIME_OBJS := $(call obj,$(RUNTIME_SRCS)) $(patsubst common/%.c,$(B)/obj/rt-common/%.o,$(COMMON_SRCS))

# Objects, not an archive: the strong definitions must replace the weak
# defaults in exports_gen.c. -Bsymbolic: our own calls stay ours.
$(RUNTIME_LIB): $(RUNTIME_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,defs -o $@ $^ -lpthread -ldl

$(B)/lib/vgpu/libcuda.so.1: $(RUNTIME_LIB)
	ln -sf libvgpu.so $@

$(VGPUD): $(call obj,daemon/main.c $(DAEMON_SRCS) $(COMMON_SRCS) $(CKPT_SRCS)) \
	$(B)/obj/gen/gpu_digest_ptx.o
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LIBURING) -lpthread -ldl -lm

# The daemon's own kernel (checkpoint content digests), shipped as PTX text
# that the driver compiles for whatever GPU it runs on.
$(B)/gen/gpu_digest.ptx: daemon/checkpoint/gpu_digest.cu
	@mkdir -p $(@D)
	$(NVCC) -ptx -arch=compute_75 -O3 -o $@ $<

$(B)/gen/gpu_digest_ptx.c: $(B)/gen/gpu_digest.ptx
	{ echo '/* Generated from daemon/checkpoint/gpu_digest.cu by nvcc -ptx. */'; \
	  echo 'const char vgpu_gpu_digest_ptx[] ='; \
	  sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $<; echo ';'; } > $@

$(B)/obj/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<

$(VGPU_CKPT): $(call obj,tools/vgpu-ckpt.c $(CKPT_SRCS))
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LIBURING) -lpthread -ldl

$(VGPU): $(call obj,tools/vgpu.c)
	@mkdir -p $(@D)
	$(CC) -o $@ $^

# ---- unit tests ----------------------------------------------------------
UNIT := $(B)/tests/unit
UNIT_BINS := $(UNIT)/test_ring $(UNIT)/test_dark_api $(UNIT)/test_backend_host \
	$(UNIT)/test_ids $(UNIT)/test_context $(UNIT)/test_image_size $(UNIT)/test_procaddr $(UNIT)/test_vmem \
	$(UNIT)/test_image_check $(UNIT)/test_pool $(UNIT)/test_jit_cache
# streamops
UNIT_BINS += $(UNIT)/test_host_streamops
# green contexts
UNIT_BINS += $(UNIT)/test_host_green
# runs of launches as graphs
UNIT_BINS += $(UNIT)/test_launch_graphs
# vgpu's NVML: the supervisor's GPU query
UNIT_BINS += $(UNIT)/test_nvml_view
# CUDA IPC between sessions
UNIT_BINS += $(UNIT)/test_ipc

.PHONY: unit-bins
unit-bins: $(filter-out $(UNIT)/test_procaddr,$(UNIT_BINS))

$(UNIT)/test_ring: $(call obj,tests/unit/test_ring.c common/ring.c common/kmod.c common/log.c)
$(UNIT)/test_dark_api: $(call obj,tests/unit/test_dark_api.c) \
	$(patsubst %.c,$(B)/obj/unit-rt/%.o,$(wildcard runtime/dark/dark_*.c)) \
	$(call obj,common/log.c)
$(UNIT)/test_backend_host: $(call obj,tests/unit/test_backend_host.c $(HOST_BACKEND_SRCS) common/log.c)
$(UNIT)/test_ids: $(call obj,tests/unit/test_ids.c) $(B)/obj/unit-rt/runtime/session/ids.o $(call obj,common/log.c)
$(UNIT)/test_context: $(call obj,tests/unit/test_context.c) \
	$(patsubst %.c,$(B)/obj/unit-rt/%.o,runtime/session/init.c runtime/session/trace.c runtime/api/device.c runtime/api/context.c \
		runtime/api/primary_ctx.c runtime/api/ctx_config.c runtime/session/ids.c) \
	$(call obj,common/log.c)
$(UNIT)/test_image_size: $(call obj,tests/unit/test_image_size.c) $(B)/obj/unit-rt/runtime/module/image.o $(call obj,common/log.c)
$(UNIT)/test_image_check: $(call obj,tests/unit/test_image_check.c $(wildcard daemon/backend/host/host_image*.c) common/log.c)
$(UNIT)/test_jit_cache: $(call obj,tests/unit/test_jit_cache.c daemon/supervisor/jit_cache.c)
$(UNIT)/test_vmem: $(call obj,tests/unit/test_vmem.c daemon/worker/vmem.c $(HOST_BACKEND_SRCS) common/log.c)
$(UNIT)/test_host_streamops: $(call obj,tests/unit/test_host_streamops.c $(HOST_BACKEND_SRCS) common/log.c)
$(UNIT)/test_host_green: $(call obj,tests/unit/test_host_green.c $(HOST_BACKEND_SRCS) common/log.c)
$(UNIT)/test_nvml_view: $(call obj,tests/unit/test_nvml_view.c daemon/supervisor/nvml_view.c)
$(UNIT)/test_launch_graphs: $(call obj,tests/unit/test_launch_graphs.c daemon/worker/launch_graphs.c \
	daemon/worker/objects.c common/log.c)
$(UNIT)/test_pool: $(call obj,tests/unit/test_pool.c daemon/worker/pool.c daemon/worker/exec/exec_pool.c daemon/worker/vmem.c daemon/worker/objects.c $(HOST_BACKEND_SRCS) common/log.c)
$(UNIT)/test_ipc: $(call obj,tests/unit/test_ipc.c daemon/worker/ipc/ipc_mem.c daemon/worker/ipc/ipc_server.c \
	daemon/worker/vmem.c daemon/worker/objects.c $(HOST_BACKEND_SRCS) common/fdpass.c common/log.c)

# Runtime files built without hidden visibility for tests that call them.
$(B)/obj/unit-rt/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(RUNTIME_INC) $(CFLAGS_ALL) -MMD -MP -c -o $@ $<

$(UNIT)/%:
	@mkdir -p $(@D)
	$(CC) -o $@ $^ -lpthread -ldl -lm

include mk/exports.mk
include mk/nvml.mk
include mk/calls.mk
include mk/tools.mk
-include mk/kmod.mk
-include mk/tests.mk
include mk/fuzz.mk

# ---- install -------------------------------------------------------------
install: all install-tools
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/lib/vgpu
	install -m 755 $(VGPU) $(DESTDIR)$(PREFIX)/bin/vgpu
	install -m 755 $(VGPU_CKPT) $(DESTDIR)$(PREFIX)/bin/vgpu-ckpt
	install -m 755 $(VGPUD) $(DESTDIR)$(PREFIX)/sbin/vgpud
	install -m 755 $(RUNTIME_LIB) $(DESTDIR)$(PREFIX)/lib/vgpu/libvgpu.so
	install -m 755 $(NVML_LIB) $(DESTDIR)$(PREFIX)/lib/vgpu/libnvidia-ml.so.1
	ln -sf libvgpu.so $(DESTDIR)$(PREFIX)/lib/vgpu/libcuda.so.1
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed 's|@SBINDIR@|$(PREFIX)/sbin|' daemon/vgpud.service.in > $(DESTDIR)$(PREFIX)/lib/systemd/system/vgpud.service

clean:
	rm -rf $(B)

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# ---- the example the README's first command runs -------------------------
$(B)/examples/vecadd: examples/vecadd.cu tests/e2e/kernels.cuh
	@mkdir -p $(@D)
	$(NVCC) -O2 -o $@ $<

demo:
	tools/demo

# ---- checkpoint files (issue 4): the library's unit test ------------------
UNIT_BINS += $(UNIT)/test_ckpt
unit-bins: $(UNIT)/test_ckpt
$(UNIT)/test_ckpt: $(call obj,tests/unit/test_ckpt.c $(CKPT_SRCS))
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LIBURING) -lpthread -ldl

# ---- the checkpoint writer on a caller's descriptor (issue 10) -------------
UNIT_BINS += $(UNIT)/test_ckpt_fd
unit-bins: $(UNIT)/test_ckpt_fd
$(UNIT)/test_ckpt_fd: $(call obj,tests/unit/test_ckpt_fd.c $(CKPT_SRCS))
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LIBURING) -lpthread -ldl

# ---- the host backend's sharing of VMM memory (issue 11, vmm) ---------------
UNIT_BINS += $(UNIT)/test_host_vmm
unit-bins: $(UNIT)/test_host_vmm
$(UNIT)/test_host_vmm: $(call obj,tests/unit/test_host_vmm.c $(HOST_BACKEND_SRCS) common/log.c)
