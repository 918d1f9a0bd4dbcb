FUZZ_SRCS_nvml := daemon/supervisor/nvml_view.c
