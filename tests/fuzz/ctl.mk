FUZZ_SRCS_ctl := daemon/ctl_request.c
