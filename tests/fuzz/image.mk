FUZZ_SRCS_image := daemon/backend_host.c $(filter daemon/host_%.c,$(wildcard daemon/*.c))
