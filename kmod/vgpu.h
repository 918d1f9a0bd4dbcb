/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgpu.ko internals shared between its files.
 *
 * Lock order: vgpu_lock (registry, server slot) > session->lock >
 * server->lock (spinlock). mmap_lock is never taken under session->lock
 * (pinning runs unlocked), while the fault and mmap handlers take
 * session->lock under mmap_lock. pin->stale_lock (spinlock) is a leaf: a
 * region's mmu notifier takes it inside the client's invalidations.
 */
#ifndef _VGPU_H
#define _VGPU_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include <uapi/vgpu.h>

enum vgpu_role {
	VGPU_ROLE_NONE,
	VGPU_ROLE_CLIENT,
	VGPU_ROLE_SERVER,
	VGPU_ROLE_WORKER,
};

/* Per open file description (a /dev/vgpu open, or a worker fd). */
struct vgpu_file {
	struct mutex lock;		/* serialises the role change */
	enum vgpu_role role;		/* release-stored once set */
	struct vgpu_session *s;		/* client, worker */
	struct vgpu_server *srv;	/* server */
};

/* An array of order-0 pages mapped to user space as one part. */
struct vgpu_pages {
	struct page **pages;
	unsigned long n;
};

/* A queued server event; embedded in the session, so posting never fails. */
struct vgpu_evnode {
	struct list_head link;		/* on server->events, or empty */
	struct vgpu_session *s;
	u32 type;
};

struct vgpu_server {
	struct kref ref;
	spinlock_t lock;		/* protects events, dead */
	struct list_head events;
	wait_queue_head_t wq;
	bool dead;
};

/* A pinned client range. */
struct vgpu_pin {
	u32 idx;
	u32 flags;
	u64 addr;
	u64 len;
	unsigned long npages;
	struct page **pages;
	struct mm_struct *mm;		/* charged pinned_vm, mmgrab()bed */
	/* Watches the client's mapping of the covering pages. */
	struct mmu_interval_notifier notifier;
	spinlock_t stale_lock;		/* the notifier's sequence, stale */
	bool stale;			/* set by the notifier, never cleared */
};

struct vgpu_session {
	struct kref ref;
	u64 id;
	struct vgpu_server *srv;	/* the server at SETUP, referenced */
	struct mutex lock;		/* protects regions, dead */
	bool dead;			/* set once, read locklessly */
	struct xarray regions;		/* index -> struct vgpu_pin */
	u32 region_next;
	struct inode *inode;		/* address_space of worker fds */

	struct vgpu_pages status;
	struct vgpu_pages rings;
	struct vgpu_pages arena;
	struct vgpu_setup geo;		/* SESSION_INFO reply */

	wait_queue_head_t sq_wq;	/* worker sleeps for SQEs */
	wait_queue_head_t cq_wq;	/* client sleeps for CQEs */
	atomic64_t submitted;		/* client doorbells */
	atomic64_t completed;		/* worker doorbells */
	atomic64_t pinned_pages;
	atomic_t nregions;

	/* client identity at SETUP */
	struct pid *tgid;
	struct pid *tid;
	kuid_t uid;
	kgid_t gid;
	u64 cgroup_id;
	char comm[TASK_COMM_LEN];

	struct vgpu_evnode ev[3];	/* OPENED, CLOSED, DOORBELL */
};

struct vgpu_stats {
	atomic64_t sessions;
	atomic64_t sessions_total;
	atomic64_t pinned_pages;
	atomic64_t regions;
	atomic64_t registrations;
	atomic64_t doorbells;
	atomic64_t workers;
};

extern struct vgpu_stats vgpu_stats;
extern struct mutex vgpu_lock;
extern struct vgpu_server *vgpu_server;	/* under vgpu_lock */
extern struct xarray vgpu_sessions;		/* under vgpu_lock */

/* main.c */
extern const struct file_operations vgpu_fops;
u64 vgpu_max_pinned_pages(void);

/* session.c */
long vgpu_session_setup(struct vgpu_file *vf, void __user *argp);
long vgpu_session_info(struct vgpu_session *s, void __user *argp);
void vgpu_session_close(struct vgpu_session *s);
void vgpu_session_kill(struct vgpu_session *s, u32 why);
struct vgpu_session *vgpu_session_find(u64 id);
void vgpu_session_get(struct vgpu_session *s);
void vgpu_session_put(struct vgpu_session *s);
long vgpu_doorbell(struct vgpu_file *vf);
long vgpu_wait(struct vgpu_file *vf, void __user *argp);
__poll_t vgpu_session_poll(struct vgpu_file *vf, struct file *file,
			   poll_table *pt);

/* server.c */
long vgpu_server_register(struct vgpu_file *vf, void __user *argp);
void vgpu_server_unregister(struct vgpu_server *srv);
void vgpu_server_put(struct vgpu_server *srv);
void vgpu_server_post(struct vgpu_session *s, u32 type);
ssize_t vgpu_server_read(struct vgpu_server *srv, char __user *buf,
			 size_t count, bool nonblock);
__poll_t vgpu_server_poll(struct vgpu_server *srv, struct file *file,
			  poll_table *pt);
long vgpu_server_attach(struct vgpu_server *srv, void __user *argp);
long vgpu_server_kill(struct vgpu_server *srv, void __user *argp);

/* ring.c */
int vgpu_rings_alloc(struct vgpu_session *s, const struct vgpu_setup *p);
void vgpu_rings_free(struct vgpu_session *s);
int vgpu_rings_mmap(struct vgpu_session *s, struct vm_area_struct *vma);
bool vgpu_sq_ready(struct vgpu_session *s);
bool vgpu_cq_ready(struct vgpu_session *s);
void vgpu_status_set(struct vgpu_session *s, u32 flags);

/* pin.c */
long vgpu_pin_register(struct vgpu_session *s, void __user *argp);
long vgpu_pin_unregister(struct vgpu_session *s, void __user *argp);
long vgpu_pin_info(struct vgpu_session *s, void __user *argp);
long vgpu_pin_check(struct vgpu_session *s, void __user *argp);
int vgpu_pin_mmap(struct vgpu_session *s, struct vm_area_struct *vma);
void vgpu_pin_zap_all(struct vgpu_session *s);

/* fs.c */
struct inode *vgpu_fs_inode_new(void);
void vgpu_fs_inode_put(struct inode *inode);
struct file *vgpu_fs_file(struct inode *inode, const char *name, void *priv);

/* netlink.c */
int vgpu_netlink_init(void);
void vgpu_netlink_exit(void);
void vgpu_netlink_notify(struct vgpu_session *s, u8 cmd);

#endif /* _VGPU_H */
