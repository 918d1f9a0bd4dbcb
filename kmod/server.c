// SPDX-License-Identifier: GPL-2.0
/*
 * The server: one privileged fd that reads session events, hands out
 * worker fds and ends sessions. Its exit kills every session it served.
 */
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/pid_namespace.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "vgpu.h"

struct vgpu_server *vgpu_server;

static bool setup_resv_zero(const struct vgpu_server_setup *p)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(p->resv); i++)
		if (p->resv[i])
			return false;
	return !p->resv0;
}

static struct vgpu_server *server_alloc(void)
{
	struct vgpu_server *srv;

	srv = kzalloc(sizeof(*srv), GFP_KERNEL);
	if (!srv)
		return NULL;
	kref_init(&srv->ref);
	spin_lock_init(&srv->lock);
	INIT_LIST_HEAD(&srv->events);
	init_waitqueue_head(&srv->wq);
	return srv;
}

static void server_free(struct kref *ref)
{
	kfree(container_of(ref, struct vgpu_server, ref));
}

void vgpu_server_put(struct vgpu_server *srv)
{
	kref_put(&srv->ref, server_free);
}

long vgpu_server_register(struct vgpu_file *vf, void __user *argp)
{
	struct vgpu_server_setup p;
	struct vgpu_server *srv;
	long ret;

	if (copy_from_user(&p, argp, sizeof(p)))
		return -EFAULT;
	if (p.flags || !setup_resv_zero(&p))
		return -EINVAL;
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;

	mutex_lock(&vf->lock);
	ret = -EBADFD;
	if (vf->role != VGPU_ROLE_NONE)
		goto unlock;
	ret = -ENOMEM;
	srv = server_alloc();
	if (!srv)
		goto unlock;
	mutex_lock(&vgpu_lock);
	ret = -EBUSY;
	if (!vgpu_server) {
		vgpu_server = srv;
		ret = 0;
	}
	mutex_unlock(&vgpu_lock);
	if (ret) {
		vgpu_server_put(srv);
		goto unlock;
	}
	vf->srv = srv;
	/* Publishes vf->srv; pairs with role_of(). */
	smp_store_release(&vf->role, VGPU_ROLE_SERVER);
unlock:
	mutex_unlock(&vf->lock);
	return ret;
}

/* The server fd is gone: drop its events, kill its sessions. */
void vgpu_server_unregister(struct vgpu_server *srv)
{
	struct vgpu_evnode *n, *tmp;
	struct vgpu_session *s;
	unsigned long id;
	LIST_HEAD(drain);

	spin_lock(&srv->lock);
	srv->dead = true;
	list_splice_init(&srv->events, &drain);
	spin_unlock(&srv->lock);
	list_for_each_entry_safe(n, tmp, &drain, link) {
		s = n->s;
		list_del_init(&n->link);
		vgpu_session_put(s);
	}

	mutex_lock(&vgpu_lock);
	if (vgpu_server == srv)
		vgpu_server = NULL;
	xa_for_each(&vgpu_sessions, id, s)
		if (s->srv == srv)
			vgpu_session_kill(s, VGPU_RING_SERVER_GONE);
	mutex_unlock(&vgpu_lock);
	vgpu_server_put(srv);
}

/* Queues @type for @s unless already queued; DOORBELL thereby coalesces. */
void vgpu_server_post(struct vgpu_session *s, u32 type)
{
	struct vgpu_evnode *n = &s->ev[type - VGPU_EVENT_OPENED];
	struct vgpu_server *srv = s->srv;
	bool queued = false;

	spin_lock(&srv->lock);
	if (!srv->dead && list_empty(&n->link)) {
		vgpu_session_get(s);
		list_add_tail(&n->link, &srv->events);
		queued = true;
	}
	spin_unlock(&srv->lock);
	if (queued)
		wake_up(&srv->wq);
}

static struct vgpu_evnode *event_pop(struct vgpu_server *srv)
{
	struct vgpu_evnode *n;

	spin_lock(&srv->lock);
	n = list_first_entry_or_null(&srv->events, struct vgpu_evnode, link);
	if (n)
		list_del_init(&n->link);
	spin_unlock(&srv->lock);
	return n;
}

static bool events_pending(struct vgpu_server *srv)
{
	bool pending;

	spin_lock(&srv->lock);
	pending = !list_empty(&srv->events);
	spin_unlock(&srv->lock);
	return pending;
}

/* Identity is translated into the reader's namespaces. */
static void event_fill(struct vgpu_event *ev, u32 type, struct vgpu_session *s)
{
	struct user_namespace *ns = current_user_ns();

	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->size = sizeof(*ev);
	ev->session_id = s->id;
	if (type != VGPU_EVENT_OPENED)
		return;
	ev->cgroup_id = s->cgroup_id;
	ev->pid = pid_vnr(s->tgid);
	ev->tid = pid_vnr(s->tid);
	ev->uid = from_kuid_munged(ns, s->uid);
	ev->gid = from_kgid_munged(ns, s->gid);
	ev->sq_entries = s->geo.sq_entries;
	ev->cq_entries = s->geo.cq_entries;
	ev->sqe_size = s->geo.sqe_size;
	ev->cqe_size = s->geo.cqe_size;
	ev->arena_bytes = s->geo.arena_bytes;
	BUILD_BUG_ON(sizeof(ev->comm) != TASK_COMM_LEN);
	memcpy(ev->comm, s->comm, sizeof(ev->comm));
}

ssize_t vgpu_server_read(struct vgpu_server *srv, char __user *buf,
			 size_t count, bool nonblock)
{
	struct vgpu_event ev;
	struct vgpu_evnode *n;
	size_t done = 0;
	int ret;

	if (count < sizeof(ev))
		return -EINVAL;
	while (count - done >= sizeof(ev)) {
		n = event_pop(srv);
		if (!n && done)
			break;
		if (!n && nonblock)
			return -EAGAIN;
		if (!n) {
			ret = wait_event_interruptible(srv->wq,
						       events_pending(srv));
			if (ret)
				return ret;
			continue;
		}
		event_fill(&ev, n->type, n->s);
		vgpu_session_put(n->s);
		if (copy_to_user(buf + done, &ev, sizeof(ev)))
			return done ? done : -EFAULT;
		done += sizeof(ev);
	}
	return done;
}

__poll_t vgpu_server_poll(struct vgpu_server *srv, struct file *file,
			  poll_table *pt)
{
	poll_wait(file, &srv->wq, pt);
	return events_pending(srv) ? EPOLLIN | EPOLLRDNORM : 0;
}

/* A session of @srv, referenced, or an error. */
static struct vgpu_session *server_session(struct vgpu_server *srv, u64 id)
{
	struct vgpu_session *s = vgpu_session_find(id);

	if (!s)
		return ERR_PTR(-ENOENT);
	if (s->srv != srv) {
		vgpu_session_put(s);
		return ERR_PTR(-ENOENT);
	}
	return s;
}

static struct file *worker_file(struct vgpu_session *s)
{
	struct vgpu_file *wf;
	struct file *file;

	wf = kzalloc(sizeof(*wf), GFP_KERNEL);
	if (!wf)
		return ERR_PTR(-ENOMEM);
	mutex_init(&wf->lock);
	wf->role = VGPU_ROLE_WORKER;
	wf->s = s;
	file = vgpu_fs_file(s->inode, "[vgpu-worker]", wf);
	if (IS_ERR(file))
		kfree(wf);
	return file;
}

long vgpu_server_attach(struct vgpu_server *srv, void __user *argp)
{
	struct vgpu_session *s;
	struct vgpu_attach a;
	struct file *file;
	int fd;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.resv0)
		return -EINVAL;
	s = server_session(srv, a.session_id);
	if (IS_ERR(s))
		return PTR_ERR(s);
	fd = -ESHUTDOWN;
	if (READ_ONCE(s->dead))
		goto put_session;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		goto put_session;
	file = worker_file(s);
	if (IS_ERR(file))
		goto put_fd;
	/* The worker fd owns the session reference from here on. */
	atomic64_inc(&vgpu_stats.workers);
	fd_install(fd, file);
	return fd;

put_fd:
	put_unused_fd(fd);
	fd = PTR_ERR(file);
put_session:
	vgpu_session_put(s);
	return fd;
}

long vgpu_server_kill(struct vgpu_server *srv, void __user *argp)
{
	struct vgpu_session *s;
	struct vgpu_kill k;

	if (copy_from_user(&k, argp, sizeof(k)))
		return -EFAULT;
	if (k.flags || k.resv0)
		return -EINVAL;
	s = server_session(srv, k.session_id);
	if (IS_ERR(s))
		return PTR_ERR(s);
	vgpu_session_kill(s, VGPU_RING_KILLED);
	vgpu_session_put(s);
	return 0;
}
