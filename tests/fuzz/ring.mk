FUZZ_SRCS_ring := $(filter-out daemon/supervisor.c daemon/admin.c daemon/admission.c,$(DAEMON_SRCS)) $(COMMON_SRCS) $(CKPT_SRCS) $(B)/gen/gpu_digest_ptx.c
