# SPDX-License-Identifier: MIT
# The generated driver calls (include/vgpu/calls.def, tools/gen-calls) and
# every generated file of the tree. Included by the top-level Makefile.
#
#   make regen             rewrite every generated file from its sources
#   make check-generated   fail when a generated file is not what its sources give
#   build/tests/unit/test_calls_gen   the round trip of every generated call

GEN_CALLS = $(PYTHON3) tools/gen-calls --stub $(VGPU_CUDA_STUB) --include $(CUDA_HOME)/include
CALLS_GENERATED := include/vgpu/calls_gen.h runtime/api/calls_gen.c runtime/api/calls_hand_gen.h runtime/api/calls_hand_gen.c \
	daemon/worker/exec/exec_gen.c daemon/backend/backend_gen.h \
	daemon/backend/backend_gen.c tests/unit/test_calls_gen.c

.PHONY: regen regen-calls check-generated check-calls

regen-calls:
	$(GEN_CALLS)

regen: regen-exports regen-calls

check-calls:
	@tmp=$$(mktemp -d) || exit 1; rc=0; \
	$(GEN_CALLS) --out $$tmp >/dev/null || rc=1; \
	for f in $(CALLS_GENERATED); do \
		[ $$rc -eq 0 ] || break; diff -u $$f $$tmp/$$f || rc=1; \
	done; rm -rf $$tmp; \
	[ $$rc -eq 0 ] || echo "generated call files are stale: make regen"; exit $$rc

check-generated: check-exports check-calls

UNIT_BINS += $(UNIT)/test_calls_gen
unit-bins: $(UNIT)/test_calls_gen
$(UNIT)/test_calls_gen: $(call obj,tests/unit/test_calls_gen.c tests/unit/fwd_test_worker.c \
	daemon/worker/exec/exec_gen.c daemon/worker/exec/exec_forward.c daemon/worker/objects.c \
	daemon/checkpoint/ckpt_calls.c common/log.c) \
	$(patsubst %.c,$(B)/obj/unit-rt/%.o,tests/unit/fwd_test_rt.c runtime/api/calls_gen.c \
	runtime/api/forward.c)
