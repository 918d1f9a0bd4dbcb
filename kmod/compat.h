/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences, force-included into every vgpu.ko object by
 * Kbuild so the main code is written against one API (the newest). The
 * oldest kernel supported is 6.1 (Debian 12). Kbuild probes the headers for
 * features rather than trusting version numbers, since stable and
 * distribution kernels backport.
 */
#ifndef _VGPU_COMPAT_H
#define _VGPU_COMPAT_H

#ifndef VGPU_HAVE_VM_FLAGS_SET
#include <linux/mm_types.h>
/* 6.3 made vm_flags read-only behind these helpers. */
static inline void vm_flags_set(struct vm_area_struct *vma, unsigned long flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  unsigned long flags)
{
	vma->vm_flags &= ~flags;
}
#endif

#include <net/genetlink.h>
/*
 * Per-group join permission came with 6.6 and to later 6.1.y stable kernels.
 * Where it is missing, anyone may join the events group and see every
 * session open and close.
 */
#ifndef GENL_MCAST_CAP_NET_ADMIN
#define GENL_MCAST_CAP_NET_ADMIN 0
#endif

#endif /* _VGPU_COMPAT_H */
