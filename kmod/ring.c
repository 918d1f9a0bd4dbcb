// SPDX-License-Identifier: GPL-2.0
/*
 * Session pages: the read-only status page, the rings area (header page,
 * SQE array, CQE array) and the arena; their layout and their mmap.
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "vgpu.h"

/*
 * Rings header, first page of the rings area. Each word written by a
 * different side sits on its own cache line.
 */
#define HDR_SQ_HEAD	0	/* worker */
#define HDR_SQ_TAIL	64	/* client */
#define HDR_CQ_HEAD	128	/* client */
#define HDR_CQ_TAIL	192	/* worker */
#define HDR_SQ_FLAGS	256	/* worker: NEED_WAKEUP */
#define HDR_CQ_FLAGS	320	/* client: NEED_WAKEUP */
#define STATUS_FLAGS	0	/* kernel only */

static void pages_free(struct vgpu_pages *p)
{
	unsigned long i;

	for (i = 0; i < p->n; i++)
		__free_page(p->pages[i]);
	kvfree(p->pages);
	p->pages = NULL;
	p->n = 0;
}

/* Order-0 zeroed pages charged to the caller's memory cgroup. */
static int pages_alloc(struct vgpu_pages *p, unsigned long n)
{
	p->pages = kvcalloc(n, sizeof(*p->pages), GFP_KERNEL_ACCOUNT);
	if (!p->pages)
		return -ENOMEM;
	for (p->n = 0; p->n < n; p->n++) {
		p->pages[p->n] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!p->pages[p->n]) {
			pages_free(p);
			return -ENOMEM;
		}
	}
	return 0;
}

static void ring_offsets(struct vgpu_ring_offsets *o, u32 head, u32 tail,
			 u32 flags, u32 entries, u32 n, u32 size)
{
	o->head = head;
	o->tail = tail;
	o->flags = flags;
	o->entries = entries;
	o->ring_entries = n;
	o->ring_mask = n - 1;
	o->entry_size = size;
}

/* Fills s->geo from the validated request @p and allocates the pages. */
int vgpu_rings_alloc(struct vgpu_session *s, const struct vgpu_setup *p)
{
	struct vgpu_setup *g = &s->geo;
	size_t sq_bytes = PAGE_ALIGN((size_t)p->sq_entries * p->sqe_size);
	size_t cq_bytes = PAGE_ALIGN((size_t)p->cq_entries * p->cqe_size);
	size_t rings_bytes = PAGE_SIZE + sq_bytes + cq_bytes;
	int ret;

	BUILD_BUG_ON(HDR_CQ_FLAGS + sizeof(u32) > PAGE_SIZE);
	BUILD_BUG_ON(VGPU_OFF_ARENA - VGPU_OFF_RINGS <
		     (u64)VGPU_MAX_SQ_ENTRIES * VGPU_MAX_ENTRY_SIZE +
		     (u64)VGPU_MAX_CQ_ENTRIES * VGPU_MAX_ENTRY_SIZE + PAGE_SIZE);
	BUILD_BUG_ON(VGPU_MAX_ARENA_BYTES > VGPU_OFF_ARENA);

	g->sq_entries = p->sq_entries;
	g->cq_entries = p->cq_entries;
	g->sqe_size = p->sqe_size;
	g->cqe_size = p->cqe_size;
	g->arena_bytes = p->arena_bytes;
	g->features = VGPU_FEATURES;
	g->abi_version = VGPU_ABI_VERSION;
	g->status_flags = STATUS_FLAGS;
	ring_offsets(&g->sq, HDR_SQ_HEAD, HDR_SQ_TAIL, HDR_SQ_FLAGS, PAGE_SIZE,
		     p->sq_entries, p->sqe_size);
	ring_offsets(&g->cq, HDR_CQ_HEAD, HDR_CQ_TAIL, HDR_CQ_FLAGS,
		     PAGE_SIZE + sq_bytes, p->cq_entries, p->cqe_size);
	g->status_off = VGPU_OFF_STATUS;
	g->status_size = PAGE_SIZE;
	g->rings_off = VGPU_OFF_RINGS;
	g->rings_size = rings_bytes;
	g->arena_off = VGPU_OFF_ARENA;
	g->arena_size = p->arena_bytes;

	ret = pages_alloc(&s->status, 1);
	if (ret)
		return ret;
	ret = pages_alloc(&s->rings, rings_bytes >> PAGE_SHIFT);
	if (ret)
		goto free_status;
	if (!p->arena_bytes)
		return 0;
	ret = pages_alloc(&s->arena, p->arena_bytes >> PAGE_SHIFT);
	if (ret)
		goto free_rings;
	return 0;

free_rings:
	pages_free(&s->rings);
free_status:
	pages_free(&s->status);
	return ret;
}

void vgpu_rings_free(struct vgpu_session *s)
{
	pages_free(&s->arena);
	pages_free(&s->rings);
	pages_free(&s->status);
}

static u32 *hdr_word(struct vgpu_session *s, unsigned int off)
{
	return page_address(s->rings.pages[0]) + off;
}

/* Words below are written by user space: compare only, never index. */
bool vgpu_sq_ready(struct vgpu_session *s)
{
	return READ_ONCE(*hdr_word(s, HDR_SQ_TAIL)) !=
	       READ_ONCE(*hdr_word(s, HDR_SQ_HEAD));
}

bool vgpu_cq_ready(struct vgpu_session *s)
{
	return READ_ONCE(*hdr_word(s, HDR_CQ_TAIL)) !=
	       READ_ONCE(*hdr_word(s, HDR_CQ_HEAD));
}

void vgpu_status_set(struct vgpu_session *s, u32 flags)
{
	u32 *word = page_address(s->status.pages[0]) + STATUS_FLAGS;

	/* Before the wakeups that follow; pairs with the peer's load. */
	smp_store_release(word, READ_ONCE(*word) | flags);
}

static vm_fault_t vgpu_sigbus_fault(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

/* Pages are inserted at mmap time; anything else that faults is an error. */
static const struct vm_operations_struct vgpu_ring_vm_ops = {
	.fault = vgpu_sigbus_fault,
};

static struct vgpu_pages *part_of(struct vgpu_session *s, unsigned long pgoff,
				  unsigned long *first, bool *ro)
{
	*ro = false;
	if (pgoff < (VGPU_OFF_RINGS >> PAGE_SHIFT)) {
		*first = VGPU_OFF_STATUS >> PAGE_SHIFT;
		*ro = true;
		return &s->status;
	}
	if (pgoff < (VGPU_OFF_ARENA >> PAGE_SHIFT)) {
		*first = VGPU_OFF_RINGS >> PAGE_SHIFT;
		return &s->rings;
	}
	*first = VGPU_OFF_ARENA >> PAGE_SHIFT;
	return &s->arena;
}

/* Status, rings or arena; the caller checked VM_SHARED. */
int vgpu_rings_mmap(struct vgpu_session *s, struct vm_area_struct *vma)
{
	unsigned long first, start, num = vma_pages(vma);
	struct vgpu_pages *part;
	bool ro;

	part = part_of(s, vma->vm_pgoff, &first, &ro);
	start = vma->vm_pgoff - first;
	if (start >= part->n || num > part->n - start)
		return -EINVAL;
	if (ro && (vma->vm_flags & VM_WRITE))
		return -EPERM;
	if (ro)
		vm_flags_clear(vma, VM_MAYWRITE);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &vgpu_ring_vm_ops;
	return vm_insert_pages(vma, vma->vm_start, part->pages + start, &num);
}
