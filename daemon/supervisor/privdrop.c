// SPDX-License-Identifier: MIT
#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int privdrop_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name);

	if (!pw)
		return -ENOENT;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

/* True when no capability is left in any set. */
static int no_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return 0;
	for (int i = 0; i < 2; i++)
		if (d[i].effective || d[i].permitted || d[i].inheritable)
			return 0;
	return 1;
}

int privdrop(uid_t uid, gid_t gid)
{
	if (geteuid())
		return 0;	/* a daemon run by a user: nothing to give up */
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -errno;
	/* The credentials changed: the kernel forgot these. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || prctl(PR_SET_DUMPABLE, 0) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (!uid)
		return 0;	/* asked to stay root (--worker-user root) */
	/* Belt and braces: a uid of 0 left anywhere, or a capability, is a failure. */
	if (!setresuid(0, 0, 0) || !no_caps())
		return -EPERM;
	return 0;
}
