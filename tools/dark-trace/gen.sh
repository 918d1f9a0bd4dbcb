#!/bin/bash
# gen.sh EXPORTS_GEN_C OUT_S: the trampolines and the forwarders, in assembly.
set -e
names=$(grep -o '^VGPU_STUB([A-Za-z0-9_]*)' "$1" | sed 's/VGPU_STUB(\(.*\))/\1/' |
	grep -vx 'cuGetExportTable\|cuGetProcAddress\|cuGetProcAddress_v2')
{
	echo '.text'
	echo '.globl dark_trace_post'
	echo ".hidden dark_trace_post"
	cat <<'ASM'
dark_trace_common:
	push %rbp
	mov %rsp, %rbp
	push %rdi
	push %rsi
	push %rdx
	push %rcx
	push %r8
	push %r9
	push %rax
	sub $128, %rsp
	movdqu %xmm0, 0(%rsp)
	movdqu %xmm1, 16(%rsp)
	movdqu %xmm2, 32(%rsp)
	movdqu %xmm3, 48(%rsp)
	movdqu %xmm4, 64(%rsp)
	movdqu %xmm5, 80(%rsp)
	movdqu %xmm6, 96(%rsp)
	movdqu %xmm7, 112(%rsp)
	mov 8(%rbp), %rdi
	lea 16(%rbp), %rsi
	lea 128(%rsp), %rdx
	call dark_trace_pre
	mov %rax, %r11
	movdqu 0(%rsp), %xmm0
	movdqu 16(%rsp), %xmm1
	movdqu 32(%rsp), %xmm2
	movdqu 48(%rsp), %xmm3
	movdqu 64(%rsp), %xmm4
	movdqu 80(%rsp), %xmm5
	movdqu 96(%rsp), %xmm6
	movdqu 112(%rsp), %xmm7
	add $128, %rsp
	pop %rax
	pop %r9
	pop %r8
	pop %rcx
	pop %rdx
	pop %rsi
	pop %rdi
	pop %rbp
	add $8, %rsp
	jmp *%r11
dark_trace_post:
	push %rax
	push %rdx
	sub $16, %rsp
	movdqu %xmm0, (%rsp)
	mov %rax, %rdi
	call dark_trace_post_hook
	mov %rax, %r11
	movdqu (%rsp), %xmm0
	add $16, %rsp
	pop %rdx
	pop %rax
	jmp *%r11
ASM
	for i in $(seq 0 4095); do
		printf 'dark_trace_stub_%d:\n\tpush $%d\n\tjmp dark_trace_common\n' $i $i
	done
	i=0
	for n in $names; do
		printf '.globl %s\n.type %s,@function\n%s:\n\tjmp *dark_trace_fwd+%d(%%rip)\n' $n $n $n $((i * 8))
		i=$((i + 1))
	done
	echo '.section .data.rel.ro'
	echo '.globl dark_trace_stubs'
	echo '.hidden dark_trace_stubs'
	echo '.balign 8'
	echo 'dark_trace_stubs:'
	for i in $(seq 0 4095); do echo "	.quad dark_trace_stub_$i"; done
	echo '.section .data.rel.ro'
	echo '.globl dark_trace_names'
	echo '.hidden dark_trace_names'
	echo '.balign 8'
	echo 'dark_trace_names:'
	i=0
	for n in $names; do echo "	.quad .Lname$i"; i=$((i + 1)); done
	echo '.globl dark_trace_nnames'
	echo '.hidden dark_trace_nnames'
	echo "dark_trace_nnames: .long $i"
	echo '.section .rodata.str1.1'
	i=0
	for n in $names; do echo ".Lname$i: .asciz \"$n\""; i=$((i + 1)); done
	echo '.bss'
	echo '.globl dark_trace_fwd'
	echo '.hidden dark_trace_fwd'
	echo '.balign 8'
	echo "dark_trace_fwd: .zero $((i * 8))"
	echo '.section .note.GNU-stack,"",@progbits'
} >"$2"
