/* wasmbox compat: the rest of what bash calls and wasi-libc lacks.
 * umask: WASI creates files with the host's modes; the mask is kept
 * (umask shows it back, children inherit it through the environment of
 * nothing: it is per process) and starts at 022.
 * getpgrp/setpgid: no job control, every process is its own group leader
 * (getpgrp returns the pid), setpgid succeeds only as a no-op on itself.
 * gethostname: "wasmbox", what the sandbox's hostname and uname -n say. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

static mode_t mask = 022;

mode_t umask(mode_t m)
{
	mode_t old = mask;
	mask = m & 0777;
	return old;
}

pid_t getpgrp(void) { return getpid(); }

int setpgid(pid_t pid, pid_t pgid)
{
	if ((pid == 0 || pid == getpid()) && (pgid == 0 || pgid == getpid()))
		return 0;
	errno = EPERM;
	return -1;
}

int gethostname(char *name, size_t len)
{
	static const char host[] = "wasmbox";
	if (len < sizeof host) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(name, host, sizeof host);
	return 0;
}

/* mkstemp and mktemp: wasi-libc has neither; bash makes its here-document
 * and `fc` files with them. Names come from the host's random source
 * (getentropy), files are created with O_EXCL as mkstemp requires. */
static int fill(char *tmpl, size_t suffix)
{
	size_t n = strlen(tmpl);
	if (n < 6 + suffix || memcmp(tmpl + n - suffix - 6, "XXXXXX", 6) != 0) {
		errno = EINVAL;
		return -1;
	}
	static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char r[6];
	if (getentropy(r, sizeof r) < 0)
		return -1;
	for (int i = 0; i < 6; i++)
		tmpl[n - suffix - 6 + i] = set[r[i] % (sizeof set - 1)];
	return 0;
}

int mkstemps(char *tmpl, int suffix)
{
	if (suffix < 0) {
		errno = EINVAL;
		return -1;
	}
	for (int tries = 0; tries < 100; tries++) {
		if (fill(tmpl, (size_t)suffix) < 0)
			return -1;
		int fd = open(tmpl, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

int mkstemp(char *tmpl) { return mkstemps(tmpl, 0); }

char *mktemp(char *tmpl)
{
	struct stat st;
	for (int tries = 0; tries < 100; tries++) {
		if (fill(tmpl, 0) < 0) {
			tmpl[0] = 0;
			return tmpl;
		}
		if (lstat(tmpl, &st) < 0 && errno == ENOENT)
			return tmpl;
	}
	tmpl[0] = 0;
	return tmpl;
}

/* wasmbox_umask_value: the mask, for compat/meta.c's open. */
mode_t wasmbox_umask_value(void) { return mask; }
