# SPDX-License-Identifier: MIT
# Fuzzing with libFuzzer (clang, Debian's compiler-rt), ASan and UBSan.
#
#   make fuzz                  build every harness and run each FUZZ_SECONDS
#   make fuzz FUZZ=ckpt FUZZ_SECONDS=600
#   make fuzz-build            build them only (build/fuzz/fuzz_NAME)
#
# A harness is tests/fuzz/fuzz_NAME.c (LLVMFuzzerTestOneInput); tests/fuzz/NAME.mk
# names the project sources it links (FUZZ_SRCS_NAME) and may add
# FUZZ_CFLAGS_NAME and FUZZ_LIBS_NAME. Seeds live in tests/fuzz/corpus/NAME/;
# inputs that once crashed live in tests/fuzz/regress/NAME/ and are replayed
# first. tests/fuzz/run does the running (tests/run calls it too).

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_OUT := $(B)/fuzz
FUZZ_SANITIZE := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
# Not the distribution's CFLAGS: these builds are for finding bugs, not shipping.
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fno-omit-frame-pointer $(WARN) $(FUZZ_SANITIZE) \
	-D_GNU_SOURCE -DVGPU_FUZZ -I include $(COMMON_INC) $(DAEMON_INC) $(RUNTIME_INC) -I $(CUDA_HOME)/include
FUZZ_LIBS := -luring -lpthread -ldl -lm

-include $(wildcard tests/fuzz/*.mk)
FUZZ_ALL := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ ?= $(FUZZ_ALL)

.PHONY: fuzz fuzz-build
.SECONDEXPANSION:

$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_SRCS_$$*)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_CFLAGS_$*) -o $@ $< $(FUZZ_SRCS_$*) $(FUZZ_LIBS_$*) $(FUZZ_LIBS)

fuzz-build: $(addprefix $(FUZZ_OUT)/fuzz_,$(FUZZ))

fuzz: fuzz-build
	VGPU_BUILD=$(B) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run $(FUZZ)

print-fuzz-names:
	@echo $(FUZZ_ALL)
