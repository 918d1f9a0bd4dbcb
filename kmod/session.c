// SPDX-License-Identifier: GPL-2.0
/*
 * Client sessions: SETUP, the registry, doorbells and waits, death and
 * close.
 */
#include <linux/cgroup.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/pid.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "vgpu.h"

/* Protects vgpu_sessions and vgpu_server. */
DEFINE_MUTEX(vgpu_lock);
DEFINE_XARRAY_ALLOC1(vgpu_sessions);
static u32 vgpu_session_next;

static bool pow2_in(u64 v, u64 lo, u64 hi)
{
	return v >= lo && v <= hi && is_power_of_2(v);
}

static int setup_check(const struct vgpu_setup *p)
{
	int i;

	if (!pow2_in(p->sq_entries, 1, VGPU_MAX_SQ_ENTRIES))
		return -EINVAL;
	if (!pow2_in(p->cq_entries, 1, VGPU_MAX_CQ_ENTRIES))
		return -EINVAL;
	if (!pow2_in(p->sqe_size, VGPU_MIN_ENTRY_SIZE, VGPU_MAX_ENTRY_SIZE))
		return -EINVAL;
	if (!pow2_in(p->cqe_size, VGPU_MIN_ENTRY_SIZE, VGPU_MAX_ENTRY_SIZE))
		return -EINVAL;
	if (p->arena_bytes &&
	    !pow2_in(p->arena_bytes, PAGE_SIZE, VGPU_MAX_ARENA_BYTES))
		return -EINVAL;
	if (p->flags || p->resv0)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(p->resv); i++)
		if (p->resv[i])
			return -EINVAL;
	return 0;
}

static void identity_take(struct vgpu_session *s)
{
	s->tgid = get_task_pid(current, PIDTYPE_TGID);
	s->tid = get_task_pid(current, PIDTYPE_PID);
	s->uid = current_euid();
	s->gid = current_egid();
	get_task_comm(s->comm, current);
	rcu_read_lock();
	s->cgroup_id = cgroup_id(task_dfl_cgroup(current));
	rcu_read_unlock();
}

static struct vgpu_session *session_alloc(const struct vgpu_setup *p)
{
	struct vgpu_session *s;
	int i, ret;

	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return ERR_PTR(-ENOMEM);
	kref_init(&s->ref);
	mutex_init(&s->lock);
	xa_init_flags(&s->regions, XA_FLAGS_ALLOC1);
	init_waitqueue_head(&s->sq_wq);
	init_waitqueue_head(&s->cq_wq);
	for (i = 0; i < ARRAY_SIZE(s->ev); i++) {
		INIT_LIST_HEAD(&s->ev[i].link);
		s->ev[i].s = s;
		s->ev[i].type = VGPU_EVENT_OPENED + i;
	}
	ret = vgpu_rings_alloc(s, p);
	if (ret)
		goto free_session;
	s->inode = vgpu_fs_inode_new();
	ret = PTR_ERR_OR_ZERO(s->inode);
	if (ret)
		goto free_rings;
	identity_take(s);
	return s;

free_rings:
	vgpu_rings_free(s);
free_session:
	kfree(s);
	return ERR_PTR(ret);
}

static void session_free(struct kref *ref)
{
	struct vgpu_session *s = container_of(ref, struct vgpu_session, ref);

	WARN_ON(!xa_empty(&s->regions));
	xa_destroy(&s->regions);
	vgpu_fs_inode_put(s->inode);
	vgpu_rings_free(s);
	put_pid(s->tid);
	put_pid(s->tgid);
	if (s->srv)
		vgpu_server_put(s->srv);
	kfree(s);
}

void vgpu_session_get(struct vgpu_session *s)
{
	kref_get(&s->ref);
}

void vgpu_session_put(struct vgpu_session *s)
{
	kref_put(&s->ref, session_free);
}

/* Binds @s to the current server and makes it visible. */
static int session_publish(struct vgpu_session *s)
{
	struct vgpu_server *srv;
	u32 id;
	int ret;

	mutex_lock(&vgpu_lock);
	srv = vgpu_server;
	ret = -ECONNREFUSED;
	if (!srv)
		goto unlock;
	ret = xa_alloc_cyclic(&vgpu_sessions, &id, s, xa_limit_31b,
			      &vgpu_session_next, GFP_KERNEL);
	if (ret < 0)
		goto unlock;
	ret = 0;
	s->id = id;
	s->geo.session_id = id;
	kref_get(&srv->ref);
	s->srv = srv;
	atomic64_inc(&vgpu_stats.sessions);
	atomic64_inc(&vgpu_stats.sessions_total);
unlock:
	mutex_unlock(&vgpu_lock);
	return ret;
}

long vgpu_session_setup(struct vgpu_file *vf, void __user *argp)
{
	struct vgpu_session *s;
	struct vgpu_setup p;
	long ret;

	if (copy_from_user(&p, argp, sizeof(p)))
		return -EFAULT;
	ret = setup_check(&p);
	if (ret)
		return ret;

	mutex_lock(&vf->lock);
	ret = -EBADFD;
	if (vf->role != VGPU_ROLE_NONE)
		goto unlock;
	s = session_alloc(&p);
	ret = PTR_ERR_OR_ZERO(s);
	if (ret)
		goto unlock;
	ret = session_publish(s);
	if (ret)
		goto put_session;
	vgpu_server_post(s, VGPU_EVENT_OPENED);
	vgpu_netlink_notify(s, VGPU_CMD_SESSION_OPENED);

	ret = -EFAULT;
	if (copy_to_user(argp, &s->geo, sizeof(s->geo)))
		goto close_session;
	vf->s = s;
	/* Publishes vf->s; pairs with role_of(). */
	smp_store_release(&vf->role, VGPU_ROLE_CLIENT);
	mutex_unlock(&vf->lock);
	return 0;

close_session:
	vgpu_session_close(s);
	mutex_unlock(&vf->lock);
	return ret;
put_session:
	vgpu_session_put(s);
unlock:
	mutex_unlock(&vf->lock);
	return ret;
}

long vgpu_session_info(struct vgpu_session *s, void __user *argp)
{
	return copy_to_user(argp, &s->geo, sizeof(s->geo)) ? -EFAULT : 0;
}

/* A session reference for @id, or NULL. */
struct vgpu_session *vgpu_session_find(u64 id)
{
	struct vgpu_session *s = NULL;

	if (id > U32_MAX)
		return NULL;
	mutex_lock(&vgpu_lock);
	s = xa_load(&vgpu_sessions, id);
	if (s)
		vgpu_session_get(s);
	mutex_unlock(&vgpu_lock);
	return s;
}

/*
 * Makes @s dead: no more doorbells, waits or registrations; every worker
 * mapping of a pinned region is gone and every page unpinned when this
 * returns. Idempotent; @why is a VGPU_RING_* reason.
 */
void vgpu_session_kill(struct vgpu_session *s, u32 why)
{
	mutex_lock(&s->lock);
	if (s->dead) {
		mutex_unlock(&s->lock);
		return;
	}
	WRITE_ONCE(s->dead, true);
	vgpu_status_set(s, VGPU_RING_DEAD | why);
	mutex_unlock(&s->lock);

	vgpu_pin_zap_all(s);
	wake_up_all(&s->sq_wq);
	wake_up_all(&s->cq_wq);
}

/* The client's last reference to the fd is gone. */
void vgpu_session_close(struct vgpu_session *s)
{
	mutex_lock(&vgpu_lock);
	xa_erase(&vgpu_sessions, s->id);
	mutex_unlock(&vgpu_lock);
	atomic64_dec(&vgpu_stats.sessions);

	vgpu_session_kill(s, VGPU_RING_CLIENT_GONE);
	vgpu_server_post(s, VGPU_EVENT_CLOSED);
	vgpu_netlink_notify(s, VGPU_CMD_SESSION_CLOSED);
	vgpu_session_put(s);
}

long vgpu_doorbell(struct vgpu_file *vf)
{
	struct vgpu_session *s = vf->s;

	if (READ_ONCE(s->dead))
		return -ESHUTDOWN;
	atomic64_inc(&vgpu_stats.doorbells);
	if (vf->role == VGPU_ROLE_CLIENT) {
		atomic64_inc(&s->submitted);
		wake_up_all(&s->sq_wq);
		vgpu_server_post(s, VGPU_EVENT_DOORBELL);
	} else {
		atomic64_inc(&s->completed);
		wake_up_all(&s->cq_wq);
	}
	return 0;
}

static bool wait_done(struct vgpu_session *s, bool client)
{
	if (READ_ONCE(s->dead))
		return true;
	return client ? vgpu_cq_ready(s) : vgpu_sq_ready(s);
}

/* The client waits for CQEs, a worker for SQEs. */
long vgpu_wait(struct vgpu_file *vf, void __user *argp)
{
	bool client = vf->role == VGPU_ROLE_CLIENT;
	struct vgpu_session *s = vf->s;
	wait_queue_head_t *wq = client ? &s->cq_wq : &s->sq_wq;
	struct vgpu_wait w;
	long ret;

	if (copy_from_user(&w, argp, sizeof(w)))
		return -EFAULT;
	if (w.flags || w.resv)
		return -EINVAL;
	if (w.timeout_ns > (u64)KTIME_MAX)	/* VGPU_WAIT_FOREVER too */
		ret = wait_event_interruptible(*wq, wait_done(s, client));
	else
		ret = wait_event_interruptible_hrtimeout(*wq,
							 wait_done(s, client),
							 ns_to_ktime(w.timeout_ns));
	if (READ_ONCE(s->dead))
		return -ESHUTDOWN;
	if (ret == -ETIME)
		return -ETIMEDOUT;
	if (ret)
		return -EINTR;
	return 0;
}

__poll_t vgpu_session_poll(struct vgpu_file *vf, struct file *file,
			   poll_table *pt)
{
	bool client = vf->role == VGPU_ROLE_CLIENT;
	struct vgpu_session *s = vf->s;
	__poll_t mask = 0;

	poll_wait(file, client ? &s->cq_wq : &s->sq_wq, pt);
	if (client ? vgpu_cq_ready(s) : vgpu_sq_ready(s))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(s->dead))
		mask |= EPOLLHUP;
	return mask;
}
