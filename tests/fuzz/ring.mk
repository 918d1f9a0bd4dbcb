FUZZ_SRCS_ring := $(filter-out daemon/supervisor/supervisor.c daemon/supervisor/admin.c daemon/supervisor/admission.c,$(DAEMON_SRCS)) $(COMMON_SRCS) $(CKPT_SRCS) $(B)/gen/gpu_digest_ptx.c
