FUZZ_SRCS_ckpt := common/ckpt_file.c common/ckpt_crc.c common/ckpt_zstd.c common/ckpt_read.c common/ckpt_chain.c
