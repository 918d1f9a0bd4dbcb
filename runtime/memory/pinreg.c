// SPDX-License-Identifier: MIT
/*
 * The registration cache (see pinreg.h). Entries live in one list under one
 * lock; there are few (each is at least VGPU_PINREG_MIN bytes and all fit a
 * budget), so lookups walk it. An entry a copy holds is never unregistered
 * under it: one that goes stale or is evicted while held is only unlisted,
 * and the last holder unregisters it. After every UNREGISTER the worker is
 * told (PIN_FORGET) to drop its mapping of the handle.
 */
#include "pinreg.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"

#define BUDGET_MAX	(1ull << 30)
#define CAP_IPC_LOCK_BIT 14

struct pinreg_entry {
	struct pinreg_entry *next;	/* listed entries only */
	uint64_t start, end;		/* covering pages */
	uint64_t handle;
	bool readonly;
	bool listed;			/* false: stale or evicted, unregister at refs 0 */
	uint32_t refs;
	uint64_t used;			/* LRU tick */
};

static struct {
	pthread_mutex_t lock;
	bool inited, enabled;
	bool said_refused;
	struct vgpu_session *s;
	struct pinreg_entry *list;
	uint64_t bytes;			/* registered by entries, listed or not */
	uint64_t budget;
	uint64_t tick;
	uint64_t page;
	pid_t pid;			/* registrations are this process's */
} pr = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* CAP_IPC_LOCK in the effective set: the module skips RLIMIT_MEMLOCK. */
static bool can_ipc_lock(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long eff = 0;
	char line[128];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	fclose(f);
	return found && (eff >> CAP_IPC_LOCK_BIT) & 1;
}

static uint64_t budget(void)
{
	const char *e = getenv("VGPU_PIN_CACHE_MB");
	struct rlimit rl;

	if (e && *e)
		return strtoull(e, NULL, 0) << 20;
	if (can_ipc_lock() || getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return BUDGET_MAX;
	return rl.rlim_cur / 4 < BUDGET_MAX ? rl.rlim_cur / 4 : BUDGET_MAX;
}

static void init(struct vgpu_session *s)
{
	const char *e = getenv("VGPU_PINNED");

	pr.inited = true;
	pr.s = s;
	pr.pid = getpid();
	pr.page = (uint64_t)sysconf(_SC_PAGESIZE);
	pr.budget = budget();
	pr.enabled = !(e && !strcmp(e, "0")) && s->carrier == VGPU_CARRIER_KMOD &&
		     (s->wl.features & VGPU_FEAT_PINNED_COPY) && vgpu_kmod_pin_notify(&s->kmod) &&
		     pr.budget >= VGPU_PINREG_MIN;
	if (s->carrier == VGPU_CARRIER_KMOD)
		vlog_debug("pinreg: pinned copies %s (cache budget %llu MiB)",
			   pr.enabled ? "on" : "off", (unsigned long long)(pr.budget >> 20));
}

/* Unregisters @e, which nobody holds and no list has. */
static void release(struct pinreg_entry *e)
{
	if (vgpu_kmod_unregister(&pr.s->kmod, e->handle) == 0)
		vgpu_post5(VGPU_OP_PIN_FORGET, 0, 0, e->handle, 0, 0, 0, 0);
	pr.bytes -= e->end - e->start;
	free(e);
}

static void unlist(struct pinreg_entry *e)
{
	struct pinreg_entry **pp = &pr.list;

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	e->listed = false;
	if (!e->refs)
		release(e);
}

/* Evicts unheld entries, least recently used first, until @need more
 * bytes fit the budget (all of them with need == UINT64_MAX). */
static bool evict(uint64_t need)
{
	for (;;) {
		struct pinreg_entry *e, *lru = NULL;

		if (need != UINT64_MAX && pr.bytes + need <= pr.budget)
			return true;
		for (e = pr.list; e; e = e->next)
			if (!e->refs && (!lru || e->used < lru->used))
				lru = e;
		if (!lru)
			return need == UINT64_MAX;
		vlog_debug("pinreg: evicting %#llx", (unsigned long long)lru->handle);
		unlist(lru);
	}
}

/* A listed live entry covering [p, p + n); stale ones met on the way go. */
static struct pinreg_entry *lookup(uint64_t p, uint64_t n, bool writable)
{
	struct pinreg_entry *e, *next;

	for (e = pr.list; e; e = next) {
		int ret;

		next = e->next;
		if (p < e->start || p + n > e->end || (writable && e->readonly))
			continue;
		ret = vgpu_kmod_region_check(&pr.s->kmod, e->handle);
		if (!ret) {
			vlog_debug("pinreg: reusing %#llx", (unsigned long long)e->handle);
			return e;
		}
		vlog_debug("pinreg: %#llx is %s; registering again", (unsigned long long)e->handle,
			   ret == -ESTALE ? "stale" : strerror(-ret));
		unlist(e);
	}
	return NULL;
}

static int pin(uint64_t start, uint64_t len, bool writable, struct vgpu_kmod_region *r)
{
	int ret = vgpu_kmod_register(&pr.s->kmod, start, len, false, r);

	/* Read-only memory can still be the source of an upload. */
	if (ret == -EFAULT && !writable)
		ret = vgpu_kmod_register(&pr.s->kmod, start, len, true, r);
	if ((ret == -ENOMEM || ret == -ENOSPC) && pr.list && evict(UINT64_MAX))
		ret = vgpu_kmod_register(&pr.s->kmod, start, len, false, r);
	return ret;
}

static struct pinreg_entry *insert(uint64_t start, uint64_t end, bool writable, int *err)
{
	struct pinreg_entry *e = calloc(1, sizeof(*e));
	struct vgpu_kmod_region r;
	int ret;

	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	ret = pin(start, end - start, writable, &r);
	if (ret) {
		if ((ret == -ENOMEM || ret == -ENOSPC) && !pr.said_refused) {
			pr.said_refused = true;
			vlog_warn("pageable copies: /dev/vgpu refused to pin %llu KiB (%s%s); "
				  "staging instead", (unsigned long long)((end - start) >> 10),
				  strerror(-ret), ret == -ENOMEM ? ": RLIMIT_MEMLOCK" : "");
		} else {
			vlog_debug("pinreg: cannot pin [%#llx, %#llx): %s", (unsigned long long)start,
				   (unsigned long long)end, strerror(-ret));
		}
		free(e);
		*err = ret;
		return NULL;
	}
	*e = (struct pinreg_entry){
		.next = pr.list, .start = start, .end = end, .handle = r.handle,
		.readonly = r.readonly, .listed = true,
	};
	pr.list = e;
	pr.bytes += end - start;
	vlog_debug("pinreg: registered [%#llx, %#llx) as %#llx", (unsigned long long)start,
		   (unsigned long long)end, (unsigned long long)r.handle);
	return e;
}

int vgpu_pinreg_get(struct vgpu_session *s, uint64_t p, uint64_t n, bool writable,
		    struct vgpu_pin_use *u)
{
	struct pinreg_entry *e;
	uint64_t start, end;
	int ret = 0;

	if (!n || p + n < p)
		return -EINVAL;
	pthread_mutex_lock(&pr.lock);
	if (!pr.inited)
		init(s);
	/* A forked child sees other pages at the same addresses. */
	if (!pr.enabled || vgpu_session_dead() || getpid() != pr.pid) {
		pthread_mutex_unlock(&pr.lock);
		return -EOPNOTSUPP;
	}
	start = p & ~(pr.page - 1);
	end = (p + n + pr.page - 1) & ~(pr.page - 1);
	e = lookup(p, n, writable);
	if (!e) {
		ret = -E2BIG;
		if (end - start <= pr.budget && evict(end - start))
			e = insert(start, end, writable, &ret);
	}
	if (e) {
		e->refs++;
		e->used = ++pr.tick;
		*u = (struct vgpu_pin_use){ .handle = e->handle, .offset = p - e->start, .e = e };
	}
	pthread_mutex_unlock(&pr.lock);
	return e ? 0 : ret;
}

void vgpu_pinreg_put(struct vgpu_pin_use *u)
{
	struct pinreg_entry *e = u->e;

	pthread_mutex_lock(&pr.lock);
	if (!--e->refs && !e->listed)
		release(e);
	pthread_mutex_unlock(&pr.lock);
	u->e = NULL;
}
