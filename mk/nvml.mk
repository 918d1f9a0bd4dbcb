# SPDX-License-Identifier: MIT
# vgpu's NVML (runtime/nvml/): libnvidia-ml.so.1 beside libcuda.so.1, found
# the same way (`vgpu run`, the CDI spec). The top-level Makefile includes
# this fragment.
#
# Every entry point of NVIDIA's nvml.h (runtime/nvml/nvml.syms, the names
# declared there, versioned and not, and nvmlInternalGetExportTable, which
# NVIDIA's library exports undeclared: nvidia-smi asks it for hidden tables,
# and vgpu serves none) that runtime/nvml/ does not write answers
# NVML_ERROR_NOT_SUPPORTED: a weak default for each, replaced at link time
# by the strong definitions.

NVML_SRCS := $(shell find runtime/nvml -name '*.c')

$(B)/gen/nvml_stubs.c: runtime/nvml/nvml.syms mk/nvml.mk
	@mkdir -p $(@D)
	{ echo '/* Generated from runtime/nvml/nvml.syms by mk/nvml.mk. */'; \
	  echo '#define NOT_SUPPORTED 3	/* NVML_ERROR_NOT_SUPPORTED */'; \
	  grep -v '^nvmlErrorString$$' $< | \
	  sed 's/.*/__attribute__((weak, visibility("default"))) int &(void) { return NOT_SUPPORTED; }/'; \
	} > $@

$(NVML_LIB): $(call obj,$(NVML_SRCS)) $(B)/obj/gen/nvml_stubs.o $(B)/obj/rt-common/dial.o
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libnvidia-ml.so.1 -Wl,-Bsymbolic -Wl,-z,defs -o $@ $^ -lpthread
