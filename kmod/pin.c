// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned regions: client ranges pinned long-term, charged to the client's
 * RLIMIT_MEMLOCK and to max_pinned_mb, and mapped into workers by pfn.
 *
 * A region leaves in one order everywhere: it becomes unreachable under
 * session->lock (erased, or the session dead), then every worker PTE is
 * zapped, then the pages are unpinned. The fault handler inserts PTEs only
 * under session->lock after finding the region live, so no PTE outlives the
 * pin.
 */
#include <linux/capability.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "vgpu.h"

#define PGOFF_SHIFT	(VGPU_REGION_SHIFT - PAGE_SHIFT)
#define PGOFF_MASK	((1UL << PGOFF_SHIFT) - 1)
#define FAULT_AROUND	16	/* pages mapped per fault */

static int charge(atomic64_t *counter, unsigned long n, u64 limit, int err)
{
	s64 cur = atomic64_read(counter);

	do {
		if (cur + n > limit)
			return err;
	} while (!atomic64_try_cmpxchg(counter, &cur, cur + n));
	return 0;
}

/* Charges @n pages to the module limit and to @mm like vduse and io_uring. */
static int pin_charge(struct mm_struct *mm, unsigned long n)
{
	u64 lock_limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	int ret;

	ret = charge(&vgpu_stats.pinned_pages, n, vgpu_max_pinned_pages(),
		     -ENOSPC);
	if (ret)
		return ret;
	if (capable(CAP_IPC_LOCK))
		lock_limit = U64_MAX;
	ret = charge(&mm->pinned_vm, n, lock_limit, -ENOMEM);
	if (ret)
		atomic64_sub(n, &vgpu_stats.pinned_pages);
	return ret;
}

static void pin_uncharge(struct mm_struct *mm, unsigned long n)
{
	atomic64_sub(n, &mm->pinned_vm);
	atomic64_sub(n, &vgpu_stats.pinned_pages);
}

/* Undoes pin_user(). */
static void pin_unpin(struct vgpu_pin *p)
{
	bool dirty = !(p->flags & VGPU_REGION_READONLY);

	unpin_user_pages_dirty_lock(p->pages, p->npages, dirty);
	pin_uncharge(p->mm, p->npages);
	mmdrop(p->mm);
	kvfree(p->pages);
	kfree(p);
}

/* Undoes pin_publish() and pin_user(); the region is unreachable. */
static void pin_free(struct vgpu_session *s, struct vgpu_pin *p)
{
	atomic64_sub(p->npages, &s->pinned_pages);
	atomic_dec(&s->nregions);
	atomic64_dec(&vgpu_stats.regions);
	pin_unpin(p);
}

static loff_t pin_pos(u64 idx)
{
	return (loff_t)idx << VGPU_REGION_SHIFT;
}

static void pin_zap(struct vgpu_session *s, struct vgpu_pin *p)
{
	unmap_mapping_range(s->inode->i_mapping, pin_pos(p->idx),
			    p->npages << PAGE_SHIFT, 1);
}

static int region_check(const struct vgpu_region *r)
{
	if (r->flags & ~VGPU_REGION_FLAGS)
		return -EINVAL;
	if (r->resv[0] || r->resv[1])
		return -EINVAL;
	if (!r->len || r->len > VGPU_MAX_REGION_BYTES)
		return -EINVAL;
	if (r->addr + r->len < r->addr)
		return -EINVAL;
	if (!access_ok(u64_to_user_ptr(r->addr), r->len))
		return -EFAULT;
	return 0;
}

/* Pins the pages covering @r into a new, unpublished pin. */
static struct vgpu_pin *pin_user(const struct vgpu_region *r)
{
	unsigned long first = r->addr & PAGE_MASK;
	unsigned long npages = (PAGE_ALIGN(r->addr + r->len) - first) >>
			       PAGE_SHIFT;
	unsigned int gup = FOLL_LONGTERM;
	struct vgpu_pin *p;
	long pinned;
	int ret;

	if (npages << PAGE_SHIFT > VGPU_MAX_REGION_BYTES)
		return ERR_PTR(-EINVAL);
	if (!(r->flags & VGPU_REGION_READONLY))
		gup |= FOLL_WRITE;
	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return ERR_PTR(-ENOMEM);
	p->flags = r->flags;
	p->addr = r->addr;
	p->len = r->len;
	p->npages = npages;
	ret = -ENOMEM;
	p->pages = kvmalloc_array(npages, sizeof(*p->pages),
				  GFP_KERNEL_ACCOUNT);
	if (!p->pages)
		goto free_pin;
	ret = pin_charge(current->mm, npages);
	if (ret)
		goto free_pages;
	pinned = pin_user_pages_fast(first, npages, gup, p->pages);
	if (pinned != npages) {
		ret = pinned < 0 ? pinned : -EFAULT;
		goto unpin;
	}
	p->mm = current->mm;
	mmgrab(p->mm);
	return p;

unpin:
	if (pinned > 0)
		unpin_user_pages(p->pages, pinned);
	pin_uncharge(current->mm, npages);
free_pages:
	kvfree(p->pages);
free_pin:
	kfree(p);
	return ERR_PTR(ret);
}

/* Makes @p reachable by its handle. */
static int pin_publish(struct vgpu_session *s, struct vgpu_pin *p)
{
	int ret;

	mutex_lock(&s->lock);
	ret = -ESHUTDOWN;
	if (s->dead)
		goto unlock;
	ret = xa_alloc_cyclic(&s->regions, &p->idx, p,
			      XA_LIMIT(1, VGPU_MAX_REGIONS), &s->region_next,
			      GFP_KERNEL_ACCOUNT);
	if (ret == -EBUSY)
		ret = -ENOSPC;
	if (ret < 0)
		goto unlock;
	ret = 0;
	atomic64_add(p->npages, &s->pinned_pages);
	atomic_inc(&s->nregions);
	atomic64_inc(&vgpu_stats.regions);
	atomic64_inc(&vgpu_stats.registrations);
unlock:
	mutex_unlock(&s->lock);
	return ret;
}

/* A live region of @s by handle; under session->lock. */
static struct vgpu_pin *pin_find(struct vgpu_session *s, u64 handle)
{
	u64 idx = handle >> VGPU_REGION_SHIFT;

	lockdep_assert_held(&s->lock);
	if (handle & ((1ULL << VGPU_REGION_SHIFT) - 1))
		return NULL;
	if (!idx || idx > VGPU_MAX_REGIONS || s->dead)
		return NULL;
	return xa_load(&s->regions, idx);
}

/* Unpublishes the region @handle; the caller zaps and frees it. */
static struct vgpu_pin *pin_take(struct vgpu_session *s, u64 handle)
{
	struct vgpu_pin *p;

	mutex_lock(&s->lock);
	p = pin_find(s, handle);
	if (p)
		xa_erase(&s->regions, p->idx);
	mutex_unlock(&s->lock);
	return p;
}

static void region_fill(struct vgpu_region *r, const struct vgpu_pin *p)
{
	r->addr = p->addr;
	r->len = p->len;
	r->flags = p->flags;
	r->page_offset = p->addr & ~PAGE_MASK;
	r->handle = pin_pos(p->idx);
	r->map_len = p->npages << PAGE_SHIFT;
}

long vgpu_pin_register(struct vgpu_session *s, void __user *argp)
{
	struct vgpu_region r;
	struct vgpu_pin *p;
	long ret;

	if (copy_from_user(&r, argp, sizeof(r)))
		return -EFAULT;
	ret = region_check(&r);
	if (ret)
		return ret;
	if (READ_ONCE(s->dead))
		return -ESHUTDOWN;
	p = pin_user(&r);
	if (IS_ERR(p))
		return PTR_ERR(p);
	ret = pin_publish(s, p);
	if (ret) {
		pin_unpin(p);
		return ret;
	}
	region_fill(&r, p);
	if (!copy_to_user(argp, &r, sizeof(r)))
		return 0;
	p = pin_take(s, r.handle);
	if (p) {
		pin_zap(s, p);
		pin_free(s, p);
	}
	return -EFAULT;
}

long vgpu_pin_unregister(struct vgpu_session *s, void __user *argp)
{
	struct vgpu_pin *p;
	u64 handle;

	if (get_user(handle, (u64 __user *)argp))
		return -EFAULT;
	if (READ_ONCE(s->dead))
		return -ESHUTDOWN;
	p = pin_take(s, handle);
	if (!p)
		return -ENOENT;
	pin_zap(s, p);
	pin_free(s, p);
	return 0;
}

long vgpu_pin_info(struct vgpu_session *s, void __user *argp)
{
	struct vgpu_region r;
	struct vgpu_pin *p;

	if (copy_from_user(&r, argp, sizeof(r)))
		return -EFAULT;
	if (r.resv[0] || r.resv[1])
		return -EINVAL;
	if (READ_ONCE(s->dead))
		return -ESHUTDOWN;
	mutex_lock(&s->lock);
	p = pin_find(s, r.handle);
	if (p)
		region_fill(&r, p);
	mutex_unlock(&s->lock);
	if (!p)
		return -ENOENT;
	return copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
}

/* The session is dead (no region can be added): zap all, then unpin all. */
void vgpu_pin_zap_all(struct vgpu_session *s)
{
	struct vgpu_pin *p;
	unsigned long idx;

	unmap_mapping_range(s->inode->i_mapping, pin_pos(1), 0, 1);
	mutex_lock(&s->lock);
	xa_for_each(&s->regions, idx, p) {
		xa_erase(&s->regions, idx);
		pin_free(s, p);
	}
	mutex_unlock(&s->lock);
}

static vm_fault_t vgpu_pin_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct vgpu_session *s = vma->vm_private_data;
	unsigned long i = vmf->pgoff & PGOFF_MASK;
	unsigned long addr = vmf->address & PAGE_MASK;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	struct vgpu_pin *p;
	int n;

	mutex_lock(&s->lock);
	p = pin_find(s, pin_pos(vmf->pgoff >> PGOFF_SHIFT));
	if (!p || i >= p->npages)
		goto unlock;
	ret = vmf_insert_pfn(vma, addr, page_to_pfn(p->pages[i]));
	for (n = 1; n < FAULT_AROUND; n++) {
		addr += PAGE_SIZE;
		if (addr >= vma->vm_end || ++i >= p->npages)
			break;
		vmf_insert_pfn(vma, addr, page_to_pfn(p->pages[i]));
	}
unlock:
	mutex_unlock(&s->lock);
	return ret;
}

static const struct vm_operations_struct vgpu_pin_vm_ops = {
	.fault = vgpu_pin_fault,
};

/* A worker maps part of a region; the caller checked VM_SHARED. */
int vgpu_pin_mmap(struct vgpu_session *s, struct vm_area_struct *vma)
{
	unsigned long start = vma->vm_pgoff & PGOFF_MASK;
	u64 handle = pin_pos(vma->vm_pgoff >> PGOFF_SHIFT);
	struct vgpu_pin *p;
	int ret = -EINVAL;

	if ((vma->vm_pgoff >> PGOFF_SHIFT) > VGPU_MAX_REGIONS)
		return -EINVAL;
	mutex_lock(&s->lock);
	p = pin_find(s, handle);
	if (!p)
		goto unlock;
	if (start >= p->npages || vma_pages(vma) > p->npages - start)
		goto unlock;
	ret = -EPERM;
	if ((p->flags & VGPU_REGION_READONLY) && (vma->vm_flags & VM_WRITE))
		goto unlock;
	if (p->flags & VGPU_REGION_READONLY)
		vm_flags_clear(vma, VM_MAYWRITE);
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &vgpu_pin_vm_ops;
	vma->vm_private_data = s;
	ret = 0;
unlock:
	mutex_unlock(&s->lock);
	return ret;
}
