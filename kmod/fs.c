// SPDX-License-Identifier: GPL-2.0
/*
 * A private pseudo file system that gives every session its own inode, so
 * the worker fds of one session share one address_space and
 * unmap_mapping_range() reaches exactly their mappings.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>

#include "vgpu.h"

#define VGPU_FS_MAGIC 0x76677075	/* "vgpu" */

static struct vfsmount *vgpu_mnt;
static int vgpu_mnt_count;

static int vgpu_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, VGPU_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type vgpu_fs_type = {
	.name = "vgpu",
	.owner = THIS_MODULE,
	.init_fs_context = vgpu_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

/* Each live inode holds one pin on the mount, so an idle module unloads. */
struct inode *vgpu_fs_inode_new(void)
{
	struct inode *inode;
	int ret;

	ret = simple_pin_fs(&vgpu_fs_type, &vgpu_mnt, &vgpu_mnt_count);
	if (ret)
		return ERR_PTR(ret);
	inode = alloc_anon_inode(vgpu_mnt->mnt_sb);
	if (IS_ERR(inode))
		simple_release_fs(&vgpu_mnt, &vgpu_mnt_count);
	return inode;
}

void vgpu_fs_inode_put(struct inode *inode)
{
	iput(inode);
	simple_release_fs(&vgpu_mnt, &vgpu_mnt_count);
}

/* A file on @inode with vgpu_fops; the caller holds a pin on the mount. */
struct file *vgpu_fs_file(struct inode *inode, const char *name, void *priv)
{
	struct file *file;

	if (!try_module_get(THIS_MODULE))
		return ERR_PTR(-ENOENT);
	ihold(inode);
	file = alloc_file_pseudo(inode, vgpu_mnt, name, O_RDWR, &vgpu_fops);
	if (IS_ERR(file)) {
		iput(inode);
		module_put(THIS_MODULE);
		return file;
	}
	file->private_data = priv;
	return file;
}
