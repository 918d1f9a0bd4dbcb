// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu.ko: /dev/vgpu, its file operations and the module's life.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "vgpu.h"

static unsigned int max_pinned_mb;
module_param(max_pinned_mb, uint, 0644);
MODULE_PARM_DESC(max_pinned_mb,
		 "Limit on all pinned client memory in MiB (0: half of RAM)");

struct vgpu_stats vgpu_stats;

u64 vgpu_max_pinned_pages(void)
{
	unsigned int mb = READ_ONCE(max_pinned_mb);

	if (!mb)
		return totalram_pages() / 2;
	return (u64)mb << (20 - PAGE_SHIFT);
}

static long get_info(void __user *argp)
{
	struct vgpu_info info = {
		.abi_version = VGPU_ABI_VERSION,
		.page_size = PAGE_SIZE,
		.features = VGPU_FEATURES,
		.max_sq_entries = VGPU_MAX_SQ_ENTRIES,
		.max_cq_entries = VGPU_MAX_CQ_ENTRIES,
		.max_arena_bytes = VGPU_MAX_ARENA_BYTES,
		.min_entry_size = VGPU_MIN_ENTRY_SIZE,
		.max_entry_size = VGPU_MAX_ENTRY_SIZE,
		.max_region_bytes = VGPU_MAX_REGION_BYTES,
		.max_pinned_bytes = vgpu_max_pinned_pages() << PAGE_SHIFT,
	};

	return copy_to_user(argp, &info, sizeof(info)) ? -EFAULT : 0;
}

static bool known_cmd(unsigned int cmd)
{
	switch (cmd) {
	case VGPU_IOC_SESSION_INFO:
	case VGPU_IOC_DOORBELL:
	case VGPU_IOC_WAIT:
	case VGPU_IOC_REGISTER:
	case VGPU_IOC_UNREGISTER:
	case VGPU_IOC_REGION_INFO:
	case VGPU_IOC_REGION_CHECK:
	case VGPU_IOC_ATTACH:
	case VGPU_IOC_KILL:
		return true;
	}
	return false;
}

static long client_ioctl(struct vgpu_file *vf, unsigned int cmd,
			 unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case VGPU_IOC_SESSION_INFO:
		return vgpu_session_info(vf->s, argp);
	case VGPU_IOC_DOORBELL:
		return arg ? -EINVAL : vgpu_doorbell(vf);
	case VGPU_IOC_WAIT:
		return vgpu_wait(vf, argp);
	case VGPU_IOC_REGISTER:
		return vgpu_pin_register(vf->s, argp);
	case VGPU_IOC_UNREGISTER:
		return vgpu_pin_unregister(vf->s, argp);
	case VGPU_IOC_REGION_CHECK:
		return vgpu_pin_check(vf->s, argp);
	}
	return known_cmd(cmd) ? -EBADFD : -ENOTTY;
}

static long worker_ioctl(struct vgpu_file *vf, unsigned int cmd,
			 unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case VGPU_IOC_SESSION_INFO:
		return vgpu_session_info(vf->s, argp);
	case VGPU_IOC_DOORBELL:
		return arg ? -EINVAL : vgpu_doorbell(vf);
	case VGPU_IOC_WAIT:
		return vgpu_wait(vf, argp);
	case VGPU_IOC_REGION_INFO:
		return vgpu_pin_info(vf->s, argp);
	case VGPU_IOC_REGION_CHECK:
		return vgpu_pin_check(vf->s, argp);
	}
	return known_cmd(cmd) ? -EBADFD : -ENOTTY;
}

static long server_ioctl(struct vgpu_file *vf, unsigned int cmd,
			 unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case VGPU_IOC_ATTACH:
		return vgpu_server_attach(vf->srv, argp);
	case VGPU_IOC_KILL:
		return vgpu_server_kill(vf->srv, argp);
	}
	return known_cmd(cmd) ? -EBADFD : -ENOTTY;
}

static enum vgpu_role role_of(struct vgpu_file *vf)
{
	/* Pairs with the store-release that set the role and its objects. */
	return smp_load_acquire(&vf->role);
}

static long vgpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct vgpu_file *vf = file->private_data;
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case VGPU_IOC_GET_INFO:
		return get_info(argp);
	case VGPU_IOC_SETUP:
		return vgpu_session_setup(vf, argp);
	case VGPU_IOC_SERVER:
		return vgpu_server_register(vf, argp);
	}
	switch (role_of(vf)) {
	case VGPU_ROLE_CLIENT:
		return client_ioctl(vf, cmd, arg);
	case VGPU_ROLE_WORKER:
		return worker_ioctl(vf, cmd, arg);
	case VGPU_ROLE_SERVER:
		return server_ioctl(vf, cmd, arg);
	case VGPU_ROLE_NONE:
		break;
	}
	return known_cmd(cmd) ? -EBADFD : -ENOTTY;
}

static ssize_t vgpu_read(struct file *file, char __user *buf, size_t count,
			 loff_t *ppos)
{
	struct vgpu_file *vf = file->private_data;

	if (role_of(vf) != VGPU_ROLE_SERVER)
		return -EBADFD;
	return vgpu_server_read(vf->srv, buf, count,
				file->f_flags & O_NONBLOCK);
}

static __poll_t vgpu_poll(struct file *file, poll_table *pt)
{
	struct vgpu_file *vf = file->private_data;

	switch (role_of(vf)) {
	case VGPU_ROLE_CLIENT:
	case VGPU_ROLE_WORKER:
		return vgpu_session_poll(vf, file, pt);
	case VGPU_ROLE_SERVER:
		return vgpu_server_poll(vf->srv, file, pt);
	case VGPU_ROLE_NONE:
		break;
	}
	return EPOLLERR;
}

static int vgpu_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct vgpu_file *vf = file->private_data;
	enum vgpu_role role = role_of(vf);

	if (role != VGPU_ROLE_CLIENT && role != VGPU_ROLE_WORKER)
		return -EBADFD;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff < (1UL << (VGPU_REGION_SHIFT - PAGE_SHIFT)))
		return vgpu_rings_mmap(vf->s, vma);
	if (role != VGPU_ROLE_WORKER)
		return -EINVAL;
	return vgpu_pin_mmap(vf->s, vma);
}

static int vgpu_open(struct inode *inode, struct file *file)
{
	struct vgpu_file *vf;

	vf = kzalloc(sizeof(*vf), GFP_KERNEL);
	if (!vf)
		return -ENOMEM;
	mutex_init(&vf->lock);
	file->private_data = vf;
	return 0;
}

static int vgpu_release(struct inode *inode, struct file *file)
{
	struct vgpu_file *vf = file->private_data;

	switch (vf->role) {
	case VGPU_ROLE_CLIENT:
		vgpu_session_close(vf->s);
		break;
	case VGPU_ROLE_SERVER:
		vgpu_server_unregister(vf->srv);
		break;
	case VGPU_ROLE_WORKER:
		atomic64_dec(&vgpu_stats.workers);
		vgpu_session_put(vf->s);
		break;
	case VGPU_ROLE_NONE:
		break;
	}
	kfree(vf);
	return 0;
}

const struct file_operations vgpu_fops = {
	.owner = THIS_MODULE,
	.open = vgpu_open,
	.release = vgpu_release,
	.read = vgpu_read,
	.poll = vgpu_poll,
	.mmap = vgpu_mmap,
	.unlocked_ioctl = vgpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice vgpu_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = VGPU_DEVICE_NAME,
	.fops = &vgpu_fops,
	.mode = 0666,
};

static void abi_check(void)
{
	BUILD_BUG_ON(sizeof(struct vgpu_info) != 88);
	BUILD_BUG_ON(sizeof(struct vgpu_ring_offsets) != 32);
	BUILD_BUG_ON(sizeof(struct vgpu_setup) != 200);
	BUILD_BUG_ON(sizeof(struct vgpu_wait) != 16);
	BUILD_BUG_ON(sizeof(struct vgpu_region) != 56);
	BUILD_BUG_ON(sizeof(struct vgpu_server_setup) != 32);
	BUILD_BUG_ON(sizeof(struct vgpu_attach) != 16);
	BUILD_BUG_ON(sizeof(struct vgpu_kill) != 16);
	BUILD_BUG_ON(sizeof(struct vgpu_event) != 128);
	BUILD_BUG_ON(VGPU_EVENT_DOORBELL - VGPU_EVENT_OPENED + 1 !=
		     ARRAY_SIZE(((struct vgpu_session *)NULL)->ev));
	BUILD_BUG_ON(VGPU_MAX_REGION_BYTES != 1ULL << VGPU_REGION_SHIFT);
}

static int __init vgpu_init(void)
{
	int ret;

	abi_check();
	ret = vgpu_netlink_init();
	if (ret)
		return ret;
	ret = misc_register(&vgpu_misc);
	if (ret)
		goto exit_netlink;
	return 0;

exit_netlink:
	vgpu_netlink_exit();
	return ret;
}

static void __exit vgpu_exit(void)
{
	misc_deregister(&vgpu_misc);
	vgpu_netlink_exit();
}

module_init(vgpu_init);
module_exit(vgpu_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vgpu: shared rings, doorbells and pinned-page mapping for GPU virtualisation");
MODULE_VERSION("0.1");
