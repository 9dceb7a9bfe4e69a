/* wasmbox compat: resource limits. The sandbox's limits (memory, run
 * time, processes, output, open files) are enforced by the host and are
 * not visible from inside, so every limit starts unlimited, except the
 * open-file limit, which is the sandbox's descriptor table size. setrlimit
 * keeps the values (ulimit shows them back; a soft limit above the hard
 * one, or raising a hard one, fails with EINVAL/EPERM as on Linux) but the
 * guest cannot make the host enforce a lower limit. */
#include <errno.h>
#include <sys/resource.h>

#define NOFILE 1024

static struct rlimit lim[RLIMIT_NLIMITS];
static int init;

static void setup(void)
{
	if (init)
		return;
	init = 1;
	for (int i = 0; i < RLIMIT_NLIMITS; i++)
		lim[i].rlim_cur = lim[i].rlim_max = RLIM_INFINITY;
	lim[RLIMIT_NOFILE].rlim_cur = lim[RLIMIT_NOFILE].rlim_max = NOFILE;
	lim[RLIMIT_CORE].rlim_cur = 0;
}

int getrlimit(int r, struct rlimit *l)
{
	if (r < 0 || r >= RLIMIT_NLIMITS) {
		errno = EINVAL;
		return -1;
	}
	setup();
	*l = lim[r];
	return 0;
}

int setrlimit(int r, const struct rlimit *l)
{
	if (r < 0 || r >= RLIMIT_NLIMITS || l->rlim_cur > l->rlim_max) {
		errno = EINVAL;
		return -1;
	}
	setup();
	if (l->rlim_max > lim[r].rlim_max) {
		errno = EPERM;
		return -1;
	}
	lim[r] = *l;
	return 0;
}
