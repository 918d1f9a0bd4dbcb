/* SPDX-License-Identifier: MIT */
/* The only memory-ordering vocabulary vgpu's shared-memory code uses. */
#ifndef VGPU_BARRIER_H
#define VGPU_BARRIER_H

#define load_acquire(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define store_release(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)
/* A value the other side may change at any time, read exactly once. */
#define read_once(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define write_once(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define smp_mb()		__atomic_thread_fence(__ATOMIC_SEQ_CST)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif
