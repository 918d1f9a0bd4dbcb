FUZZ_SRCS_ckpt := common/ckpt/ckpt_file.c common/ckpt/ckpt_crc.c common/ckpt/ckpt_zstd.c common/ckpt/ckpt_read.c common/ckpt/ckpt_chain.c
