// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned regions: client ranges pinned long-term, charged to the client's
 * RLIMIT_MEMLOCK and to max_pinned_mb, and mapped into workers by pfn.
 *
 * A region leaves in one order everywhere: it becomes unreachable under
 * session->lock (erased, or the session dead), then every worker PTE is
 * zapped, then its notifier is removed, then the pages are unpinned. The
 * fault handler inserts PTEs only under session->lock after finding the
 * region live, so no PTE outlives the pin.
 *
 * Each region has an interval notifier on the client's mm over its covering
 * pages: an invalidation that can change which pages back the range marks
 * the region stale (see "Stale regions" in uapi/vgpu.h). The pin is taken
 * inside the notifier's read side (mmu_interval_read_begin/_retry), so a
 * region is never born stale without knowing it.
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
#define PIN_TRIES	4	/* pins raced by an invalidation before -EAGAIN */

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

/* Undoes pin_user(); no worker PTE of @p is left. May sleep. */
static void pin_unpin(struct vgpu_pin *p)
{
	bool dirty = !(p->flags & VGPU_REGION_READONLY);

	mmu_interval_notifier_remove(&p->notifier);
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

/* Which invalidations can put other pages behind the client's range. */
static bool event_moves_pages(enum mmu_notifier_event event)
{
	switch (event) {
	case MMU_NOTIFY_PROTECTION_VMA:
	case MMU_NOTIFY_PROTECTION_PAGE:
	case MMU_NOTIFY_SOFT_DIRTY:
		return false;
	default:
		return true;
	}
}

/* Runs under the invalidator's locks, possibly unable to sleep. */
static bool pin_invalidate(struct mmu_interval_notifier *mni,
			   const struct mmu_notifier_range *range,
			   unsigned long cur_seq)
{
	struct vgpu_pin *p = container_of(mni, struct vgpu_pin, notifier);

	spin_lock(&p->stale_lock);
	mmu_interval_set_seq(mni, cur_seq);
	if (event_moves_pages(range->event))
		WRITE_ONCE(p->stale, true);
	spin_unlock(&p->stale_lock);
	return true;
}

static const struct mmu_interval_notifier_ops pin_notifier_ops = {
	.invalidate = pin_invalidate,
};

/*
 * Pins @p's covering pages, starting at @first, inside the notifier's read
 * side: when an invalidation raced the pin (breaking copy-on-write in the
 * pin itself is one), the pages may not be the ones mapped now, so unpin
 * and try again.
 */
static int pin_pages(struct vgpu_pin *p, unsigned long first,
		     unsigned int gup)
{
	unsigned long seq;
	bool raced;
	long pinned;
	int tries;

	for (tries = 0; tries < PIN_TRIES; tries++) {
		seq = mmu_interval_read_begin(&p->notifier);
		pinned = pin_user_pages_fast(first, p->npages, gup, p->pages);
		if (pinned != p->npages) {
			if (pinned > 0)
				unpin_user_pages(p->pages, pinned);
			return pinned < 0 ? pinned : -EFAULT;
		}
		spin_lock(&p->stale_lock);
		raced = mmu_interval_read_retry(&p->notifier, seq);
		if (!raced)
			p->stale = false;
		spin_unlock(&p->stale_lock);
		if (!raced)
			return 0;
		unpin_user_pages(p->pages, p->npages);
	}
	return -EAGAIN;
}

/* Pins the pages covering @r into a new, unpublished pin. */
static struct vgpu_pin *pin_user(const struct vgpu_region *r)
{
	unsigned long first = r->addr & PAGE_MASK;
	unsigned long npages = (PAGE_ALIGN(r->addr + r->len) - first) >>
			       PAGE_SHIFT;
	unsigned int gup = FOLL_LONGTERM;
	struct vgpu_pin *p;
	int ret;

	if (npages << PAGE_SHIFT > VGPU_MAX_REGION_BYTES)
		return ERR_PTR(-EINVAL);
	if (!(r->flags & VGPU_REGION_READONLY))
		gup |= FOLL_WRITE;
	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&p->stale_lock);
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
	ret = mmu_interval_notifier_insert(&p->notifier, current->mm, first,
					   npages << PAGE_SHIFT,
					   &pin_notifier_ops);
	if (ret)
		goto uncharge;
	ret = pin_pages(p, first, gup);
	if (ret)
		goto remove_notifier;
	p->mm = current->mm;
	mmgrab(p->mm);
	return p;

remove_notifier:
	mmu_interval_notifier_remove(&p->notifier);
uncharge:
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
	if (READ_ONCE(p->stale))
		r->flags |= VGPU_REGION_STALE;
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

long vgpu_pin_check(struct vgpu_session *s, void __user *argp)
{
	struct vgpu_pin *p;
	u64 handle;
	long ret;

	if (get_user(handle, (u64 __user *)argp))
		return -EFAULT;
	if (READ_ONCE(s->dead))
		return -ESHUTDOWN;
	mutex_lock(&s->lock);
	p = pin_find(s, handle);
	ret = -ENOENT;
	if (p)
		ret = READ_ONCE(p->stale) ? -ESTALE : 0;
	mutex_unlock(&s->lock);
	return ret;
}

/*
 * The session is dead (no region can be added): zap all, then unpin each
 * outside session->lock, since removing a notifier waits for the client's
 * invalidations in flight.
 */
void vgpu_pin_zap_all(struct vgpu_session *s)
{
	struct vgpu_pin *p;
	unsigned long idx;

	unmap_mapping_range(s->inode->i_mapping, pin_pos(1), 0, 1);
	for (;;) {
		idx = 0;
		mutex_lock(&s->lock);
		p = xa_find(&s->regions, &idx, ULONG_MAX, XA_PRESENT);
		if (p)
			xa_erase(&s->regions, idx);
		mutex_unlock(&s->lock);
		if (!p)
			break;
		pin_free(s, p);
	}
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
