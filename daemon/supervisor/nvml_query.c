// SPDX-License-Identifier: MIT
/*
 * The GPU query (vgpu/query.h), answered by the supervisor itself: vgpu's
 * NVML asks what the GPUs are and what its user holds on them, and must
 * not cost a worker or a CUDA context for it.
 *
 * The supervisor has no CUDA of its own (the driver does not survive a
 * fork), so the first worker ready describes the GPUs into memory shared
 * with the supervisor (sv_nvml_describe); the memory and processes are the
 * sessions' (sv.w[] and the workers' statistics pages), as vgpuctl
 * sessions sees them, seen by the caller's SO_PEERCRED.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_request.h"
#include "fdpass.h"
#include "log.h"
#include "nvml_view.h"
#include "supervisor_state.h"

#define NVQ_MAX_GROUPS 1024	/* a caller's groups looked at for the admin group */

static struct nvq_devtab *devtab;	/* shared with the workers */
static uint64_t own_pidns;		/* the daemon's pid namespace */

/* The pid namespace of @pid (its inode), or 0 when it is gone. */
static uint64_t pidns_of(pid_t pid)
{
	char path[40];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

void sv_nvml_init(void)
{
	own_pidns = pidns_of(getpid());
	devtab = mmap(NULL, sizeof(*devtab), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (devtab == MAP_FAILED) {
		vlog_warn("no GPU table for NVML queries: %s", strerror(errno));
		devtab = NULL;
	}
}

/* The kernel driver's version ("580.65.06"), or "" without one. */
static void driver_version(char *out, size_t len)
{
	char line[256], *tok, *save = NULL;
	FILE *f = fopen("/proc/driver/nvidia/version", "r");

	out[0] = 0;
	if (!f)
		return;
	if (fgets(line, sizeof(line), f))
		/* "NVRM version: NVIDIA UNIX ... Kernel Module  580.65.06  Release ..." */
		for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
			if (tok[0] >= '0' && tok[0] <= '9' && strchr(tok, '.') &&
			    strspn(tok, "0123456789.") == strlen(tok)) {
				snprintf(out, len, "%s", tok);
				break;
			}
	fclose(f);
}

static int attr(const struct worker *w, CUdevice_attribute a, int i)
{
	int v = 0;

	return w->B.cuDeviceGetAttribute(&v, a, w->devices[i]) ? 0 : v;
}

static CUresult describe(const struct worker *w, int i, struct vgpu_query_device *d)
{
	CUuuid uuid;
	size_t total;
	CUresult rc;

	memset(d, 0, sizeof(*d));
	rc = w->B.cuDeviceGetName(d->name, sizeof(d->name) - 1, w->devices[i]);
	if (!rc)
		rc = w->B.cuDeviceGetUuid_v2(&uuid, w->devices[i]);
	if (!rc)
		rc = w->B.cuDeviceTotalMem_v2(&total, w->devices[i]);
	if (rc)
		return rc;
	memcpy(d->uuid, uuid.bytes, sizeof(d->uuid));
	d->total_mem = total;
	d->pci_domain = attr(w, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, i);
	d->pci_bus = attr(w, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i);
	d->pci_device = attr(w, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, i);
	d->pci_id = attr(w, CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, i);
	d->pci_subsystem = attr(w, CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID, i);
	d->cc_major = attr(w, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, i);
	d->cc_minor = attr(w, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, i);
	d->multiprocessors = attr(w, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, i);
	return CUDA_SUCCESS;
}

static void fill(const struct worker *w)
{
	int n = w->device_count < (int)VGPU_MAX_DEVICES ? w->device_count : (int)VGPU_MAX_DEVICES;
	int v = 0;

	for (int i = 0; i < n; i++)
		if (describe(w, i, &devtab->dev[i])) {
			vlog_warn("worker: GPU %d not described for NVML: the next worker tries", i);
			__atomic_store_n(&devtab->state, NVQ_EMPTY, __ATOMIC_RELEASE);
			return;
		}
	devtab->count = (uint32_t)(n > 0 ? n : 0);
	devtab->cuda_driver_version = w->B.cuDriverGetVersion(&v) ? 0 : (uint32_t)v;
	devtab->backend = w->B.kind;
	driver_version(devtab->driver_version, sizeof(devtab->driver_version));
	__atomic_store_n(&devtab->state, NVQ_READY, __ATOMIC_RELEASE);
}

/*
 * In a worker, its backend ready and before it says so (so before it
 * serves anyone): the first to come here describes the GPUs, one that
 * cannot leaves it to the next. Then the table leaves the worker's address
 * space: a worker serving a tenant cannot rewrite what the others are told.
 */
void sv_nvml_describe(const struct worker *w)
{
	uint32_t empty = NVQ_EMPTY;

	if (!devtab)
		return;
	if (__atomic_compare_exchange_n(&devtab->state, &empty, NVQ_FILLING, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		fill(w);
	munmap(devtab, sizeof(*devtab));
	devtab = NULL;
}

static bool caller_is_admin(int fd, const struct ucred *cr)
{
	static gid_t groups[NVQ_MAX_GROUPS];
	socklen_t glen = sizeof(groups);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) < 0)
		glen = 0;
	return ctl_is_admin(cr->uid, cr->gid, groups, glen / sizeof(gid_t), sv.cfg->admin_gid);
}

/*
 * @pid (as the daemon sees it) as processes of pid namespace @ns see it:
 * its innermost pid when it lives in @ns, else 0 (they cannot see it).
 */
static uint32_t pid_seen_from(uint64_t ns, uint32_t pid)
{
	char path[40], line[256], *p, *end;
	uint32_t seen = 0;
	FILE *f;

	if (pidns_of((pid_t)pid) != ns)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		/* "NSpid:	4242	17": the daemon's namespace first, its own last */
		for (p = line + 6;; p = end) {
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			seen = (uint32_t)v;
		}
		break;
	}
	fclose(f);
	return seen;
}

/* The sessions being served, as vgpuctl sessions lists them. */
static size_t sessions(struct nvq_session *out)
{
	size_t n = 0;

	for (int i = 0; i < MAX_WORKERS; i++) {
		const struct wslot *ws = &sv.w[i];

		if (!ws->pid || ws->state != W_BUSY || ws->moved)
			continue;
		out[n] = (struct nvq_session){ .id = ws->session_id, .pid = ws->client_pid,
					       .uid = ws->client_uid };
		if (sv.stats) {
			out[n].gpu = __atomic_load_n(&sv.stats[i].gpu, __ATOMIC_RELAXED);
			out[n].device_bytes = __atomic_load_n(&sv.stats[i].device_bytes,
							      __ATOMIC_RELAXED);
		}
		n++;
	}
	return n;
}

static void answer(int fd, const struct ucred *cr, int status)
{
	static struct nvq_session s[MAX_WORKERS];
	static union {
		struct vgpu_query_reply r;
		uint8_t room[sizeof(struct vgpu_query_reply) +
			     VGPU_QUERY_MAX_PROCS * sizeof(struct vgpu_query_process)];
	} out;
	size_t len;

	if (!status && (!devtab || __atomic_load_n(&devtab->state, __ATOMIC_ACQUIRE) != NVQ_READY))
		status = -EAGAIN;
	if (status) {
		memset(&out.r, 0, sizeof(out.r));
		out.r.magic = VGPU_QUERY_MAGIC;
		out.r.version = VGPU_QUERY_VERSION;
		out.r.status = status;
		len = sizeof(out.r);
	} else {
		size_t n = sessions(s);
		uint64_t ns = pidns_of(cr->pid);
		bool admin = caller_is_admin(fd, cr);

		/* A caller in a container knows its processes by its own pids
		 * (a few /proc reads for each session it may see). */
		if (ns && ns != own_pidns)
			for (size_t i = 0; i < n; i++)
				if (admin || s[i].uid == cr->uid)
					s[i].pid = pid_seen_from(ns, s[i].pid);
		len = nvq_view(&out.r, VGPU_QUERY_MAX_PROCS, devtab, s, n, cr->uid, admin);
	}
	/* One message into an empty socket: it fits, and never blocks the loop. */
	if (send(fd, &out, len, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len)
		vlog_debug("NVML query of pid %d: answer not sent: %s", cr->pid, strerror(errno));
}

/*
 * A connection whose hello is there: when it is a query, it is read,
 * answered and closed here (true); else it is left for a worker (false).
 */
bool sv_nvml_query(int fd, const struct ucred *cr)
{
	struct vgpu_hello h;
	unsigned nfds = 4;
	int fds[4], n;

	n = recv(fd, &h, sizeof(h), MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0 || !nvq_is_query(&h, (size_t)n))
		return false;
	/* It is there (peeked): this read does not wait. A longer message
	 * than a hello is refused whole (-EMSGSIZE), not read cut. */
	n = vgpu_recv_fds_exact(fd, &h, sizeof(h), fds, &nfds);
	for (unsigned i = 0; n >= 0 && i < nfds; i++)
		close(fds[i]);	/* a query brings none: any that came are dropped */
	answer(fd, cr, n < 0 ? -EINVAL : nvq_parse(&h, (size_t)n));
	close(fd);
	return true;
}
