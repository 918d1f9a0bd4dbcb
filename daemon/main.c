// SPDX-License-Identifier: MIT
/* vgpud: owns the GPUs and runs CUDA calls for its clients. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "jit_cache.h"
#include "privdrop.h"
#include "supervisor.h"
#include "vgpu/ctl.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: vgpud [options]\n"
"Owns the GPUs and executes CUDA calls for programs started with `vgpu run`.\n"
"\n"
"  -b, --backend cuda|host|auto  cuda: the GPUs through NVIDIA's driver;\n"
"                                host: device memory emulated in host memory\n"
"                                (no GPU needed); auto (default): cuda when a\n"
"                                GPU is usable, else host\n"
"  -s, --socket PATH             listen here (default %s)\n"
"  -m, --socket-mode MODE        permissions of the socket, octal (default 0666;\n"
"                                who may connect may use the GPU)\n"
"  -c, --control PATH            vgpuctl's control socket (default %s;\n"
"                                for DIR/client/NAME.sock DIR/control/NAME.ctl,\n"
"                                else beside the socket, .sock replaced by .ctl)\n"
"      --control-mode MODE       its permissions, octal (default 0666: each\n"
"                                caller acts on its own sessions only)\n"
"      --admin-group NAME        members list and act on every session, as root\n"
"                                does (default vgpu-admin when it exists)\n"
"      --worker-user NAME        the user a worker serving a root program becomes\n"
"                                (default vgpu-worker, else nobody); other programs'\n"
"                                workers become their own user\n"
"      --jit-cache DIR|none      the driver's cache of compiled PTX, one per user\n"
"                                in DIR/UID (default %s when run as\n"
"                                root, else the driver's own in $HOME/.nv)\n"
"      --checkpoint-on-exit DIR  on SIGTERM, suspend every session to DIR (their\n"
"                                programs wait, VGPU_RESUME_TIMEOUT s at most)\n"
"      --restore DIR             sessions suspended in DIR come back when their\n"
"                                programs reconnect (an upgrade under running jobs)\n"
"  -w, --workers N               workers kept ready with their context (default 2)\n"
"      --user-sessions N         sessions one user (uid) may have at once (default 64)\n"
"      --user-waiting N          connections of one user waiting for their hello or a\n"
"                                worker (default 16); past either, refused at once\n"
"      --hello-timeout SECONDS   a client must say hello this soon (default 5)\n"
"  -f, --foreground              stay in the foreground (systemd, tests)\n"
"  -h, --help                    this text\n"
"\n"
"With /dev/vgpu (vgpu.ko) present and CAP_SYS_ADMIN, vgpud registers as its\n"
"server and serves clients over it too; otherwise over memfd only.\n"
"\n"
"Environment: VGPU_LOG=debug|info|warn|error, VGPU_HOST_DEVICE_MEM (host backend\n"
"device memory, bytes).\n", VGPU_DEFAULT_SOCKET, VGPU_CTL_DEFAULT_PATH, JIT_CACHE_DEFAULT);
}

/* Probe in a child: CUDA must not be initialised in the supervisor, which
 * forks the workers. */
static int cuda_usable(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct vgpu_backend b;
		int n = 0;

		if (vgpu_backend_cuda_open(&b) || b.cuInit(0) || b.cuDeviceGetCount(&n) || n < 1)
			_exit(1);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* --admin-group NAME (a group that must exist), else vgpu-admin if it does. */
static int admin_group_of(const char *name, gid_t *gid)
{
	struct group *g = getgrnam(name ? name : "vgpu-admin");

	if (g)
		*gid = g->gr_gid;
	else if (name) {
		fprintf(stderr, "vgpud: --admin-group %s: no such group\n", name);
		return -1;
	}
	return 0;
}

/*
 * --worker-user NAME (a user that must exist), else vgpu-worker if it
 * does, else nobody: what a worker serving a root program becomes.
 */
static int worker_user_of(const char *name, uid_t *uid, gid_t *gid)
{
	if (name) {
		if (!privdrop_user(name, uid, gid))
			return 0;
		fprintf(stderr, "vgpud: --worker-user %s: no such user\n", name);
		return -1;
	}
	if (privdrop_user("vgpu-worker", uid, gid) && privdrop_user("nobody", uid, gid))
		*uid = *gid = 65534;	/* no user database: nobody's usual numbers */
	return 0;
}

/* A whole number in 1..max for option @name, or a message and -1. */
static int parse_count(const char *name, const char *arg, unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*end || end == arg || v < 1 || v > max) {
		fprintf(stderr, "vgpud: %s takes 1..%u\n", name, max);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

/*
 * A worker maps memory of its client at the client's own addresses
 * (mapped registrations of pageable memory, managed memory's views), and
 * the client keeps the worker's chosen ranges (device window, pinned pool)
 * free in turn. Programs map from the top of their address space down (the
 * kernel's default); laid out bottom-up from a third of the address space,
 * vgpud's and its workers' own mappings (the driver's included) stay clear
 * of them. So vgpud starts itself again once with the legacy layout
 * (VGPU_DAEMON_TOP_DOWN=1 keeps the default).
 */
static void bottom_up_layout(char **argv)
{
	int p = personality(0xffffffff);

	if (p < 0 || (p & ADDR_COMPAT_LAYOUT) || getenv("VGPU_DAEMON_TOP_DOWN"))
		return;
	if (personality((unsigned long)p | ADDR_COMPAT_LAYOUT) < 0)
		return;
	execv("/proc/self/exe", argv);
	personality((unsigned long)p);	/* no exec: go on as we are */
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "socket", required_argument, NULL, 's' },
		{ "socket-mode", required_argument, NULL, 'm' },
		{ "control", required_argument, NULL, 'c' },
		{ "control-mode", required_argument, NULL, 'M' },
		{ "admin-group", required_argument, NULL, 'A' },
		{ "worker-user", required_argument, NULL, 'u' },
		{ "jit-cache", required_argument, NULL, 'J' },
		{ "checkpoint-on-exit", required_argument, NULL, 'E' },
		{ "restore", required_argument, NULL, 'R' },
		{ "workers", required_argument, NULL, 'w' },
		{ "user-sessions", required_argument, NULL, 'U' },
		{ "user-waiting", required_argument, NULL, 'W' },
		{ "hello-timeout", required_argument, NULL, 'H' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct supervisor_config cfg = {
		.socket_path = VGPU_DEFAULT_SOCKET,
		.backend = "auto",
		.pool_size = 2,
		.socket_mode = 0666,
		.control_mode = 0666,
		.admin_gid = (gid_t)-1,
		.limits = { .user_sessions = 64, .user_waiting = 16, .hello_timeout = 5 },
		.worker = {
			.sq_entries = 256,
			.payload_size = 8u << 20,
			.staging_chunk = 8u << 20,
			.staging_chunks = 4,
			.host_pool_size = 64ull << 30,
			.jit_cache = geteuid() ? NULL : JIT_CACHE_DEFAULT,
		},
	};
	const char *admin_group = NULL, *worker_user = NULL;
	int c, foreground = 0;
	char *end, control[108];

	bottom_up_layout(argv);
	vgpu_log_init("vgpud", VGPU_LOG_INFO);
	while ((c = getopt_long(argc, argv, "b:s:m:c:w:fh", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			cfg.backend = optarg;
			break;
		case 's':
			cfg.socket_path = optarg;
			break;
		case 'm':
			cfg.socket_mode = strtoul(optarg, &end, 8);
			if (*end || cfg.socket_mode > 0777) {
				fprintf(stderr, "vgpud: bad socket mode '%s'\n", optarg);
				return 2;
			}
			break;
		case 'c':
			cfg.control_path = optarg;
			break;
		case 'A':
			admin_group = optarg;
			break;
		case 'u':
			worker_user = optarg;
			break;
		case 'J':
			if (optarg[0] != '/' && strcmp(optarg, "none")) {
				fprintf(stderr, "vgpud: --jit-cache takes an absolute path or none\n");
				return 2;
			}
			cfg.worker.jit_cache = optarg;
			break;
		case 'M':
			cfg.control_mode = strtoul(optarg, &end, 8);
			if (*end || cfg.control_mode > 0777) {
				fprintf(stderr, "vgpud: bad control socket mode '%s'\n", optarg);
				return 2;
			}
			break;
		case 'E':
			cfg.checkpoint_on_exit = optarg;
			break;
		case 'R':
			cfg.restore = optarg;
			break;
		case 'w':
			cfg.pool_size = strtoul(optarg, &end, 10);
			if (*end || cfg.pool_size < 1 || cfg.pool_size > 64) {
				fprintf(stderr, "vgpud: --workers takes 1..64\n");
				return 2;
			}
			break;
		case 'U':
			if (parse_count("--user-sessions", optarg, 1024, &cfg.limits.user_sessions))
				return 2;
			break;
		case 'W':
			if (parse_count("--user-waiting", optarg, ADMIT_MAX, &cfg.limits.user_waiting))
				return 2;
			break;
		case 'H':
			if (parse_count("--hello-timeout", optarg, 3600, &cfg.limits.hello_timeout))
				return 2;
			break;
		case 'f':
			foreground = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vgpud: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (admin_group_of(admin_group, &cfg.admin_gid) ||
	    worker_user_of(worker_user, &cfg.worker_uid, &cfg.worker_gid))
		return 2;
	if (!cfg.control_path) {
		cfg.control_path = vgpu_ctl_path_for(cfg.socket_path, control, sizeof(control));
		if (!cfg.control_path) {
			fprintf(stderr, "vgpud: socket path too long for a control socket beside it\n");
			return 2;
		}
	}
	if (!strcmp(cfg.backend, "auto"))
		cfg.backend = cuda_usable() ? "cuda" : "host";
	if (strcmp(cfg.backend, "cuda") && strcmp(cfg.backend, "host")) {
		fprintf(stderr, "vgpud: unknown backend '%s' (cuda, host or auto)\n", cfg.backend);
		return 2;
	}
	if (!foreground && daemon(0, 1) < 0) {
		fprintf(stderr, "vgpud: cannot detach: %s\n", strerror(errno));
		return 1;
	}
	return supervisor_run(&cfg);
}
