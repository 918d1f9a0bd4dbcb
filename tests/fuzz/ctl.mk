FUZZ_SRCS_ctl := daemon/supervisor/ctl_request.c
