/* wasmbox compat: permission bits and owners (runtime.MetaABI).
 *
 * WASI's filestat has no mode and no owner: through wasi-libc every file
 * is mode 0 and owned by uid 0, so bash would find no command executable,
 * `test -x` would always fail and umask would change nothing. bash is
 * linked with --wrap for stat, lstat, fstatat, faccessat, access and open,
 * and chmod and fchmod are defined here; they take them from the host's wasmbox.stat and
 * wasmbox.chmod calls:
 *   - stat/lstat/fstatat: the 07777 bits, uid and gid from the VFS;
 *   - access/faccessat: decided from those bits and the sandbox user
 *     (compat/ids.c), as access(2) decides for an unprivileged user;
 *   - open with O_CREAT of a new file: mode & ~umask (compat/misc.c),
 *     but for 0666 under the starting 022, which keeps the host's mode;
 *   - chmod (wasi-libc has none): wasmbox.chmod; fchmod: ENOSYS (no path to name; bash only
 *     narrows its own temporary files with it).
 * fstat of a descriptor keeps wasi-libc's answer (no path to ask about).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((import_module("wasmbox"), import_name("stat")))
int32_t wasmbox_meta_stat(const char *path, uint32_t len, uint32_t follow, void *out);
__attribute__((import_module("wasmbox"), import_name("chmod")))
int32_t wasmbox_meta_chmod(const char *path, uint32_t len, uint32_t mode, uint32_t follow);

int __real_stat(const char *restrict, struct stat *restrict);
int __real_lstat(const char *restrict, struct stat *restrict);
int __real_fstatat(int, const char *restrict, struct stat *restrict, int);
int __real_open(const char *, int, ...);

extern mode_t wasmbox_umask_value(void);

/* WASI errno (the host's answer) to errno: the same numbering in wasi-libc. */
static int fail(int32_t e)
{
	errno = e;
	return -1;
}

/* absolute: name resolved against the working directory, in buf. */
static const char *absolute(const char *name, char *buf, size_t size)
{
	if (name[0] == '/')
		return name;
	if (!getcwd(buf, size))
		return NULL;
	size_t n = strlen(buf), m = strlen(name);
	if (n + 1 + m + 1 > size) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (n > 1 || buf[0] != '/')
		buf[n++] = '/';
	memcpy(buf + n, name, m + 1);
	return buf;
}

struct meta {
	uint32_t mode, uid, gid, nlink;
};

static int meta(const char *name, int follow, struct meta *m)
{
	char buf[PATH_MAX];
	const char *p = absolute(name, buf, sizeof buf);
	if (!p)
		return -1;
	int32_t e = wasmbox_meta_stat(p, (uint32_t)strlen(p), (uint32_t)follow, m);
	return e ? fail(e) : 0;
}

static void fill(struct stat *st, const struct meta *m)
{
	st->st_mode = (st->st_mode & S_IFMT) | (m->mode & 07777);
	st->st_uid = m->uid;
	st->st_gid = m->gid;
	if (m->nlink)
		st->st_nlink = m->nlink;
}

int __wrap_stat(const char *restrict name, struct stat *restrict st)
{
	struct meta m;
	int r = __real_stat(name, st);
	if (r == 0 && meta(name, 1, &m) == 0)
		fill(st, &m);
	return r;
}

int __wrap_lstat(const char *restrict name, struct stat *restrict st)
{
	struct meta m;
	int r = __real_lstat(name, st);
	if (r == 0 && meta(name, 0, &m) == 0)
		fill(st, &m);
	return r;
}

int __wrap_fstatat(int dirfd, const char *restrict name, struct stat *restrict st, int flags)
{
	struct meta m;
	int r = __real_fstatat(dirfd, name, st, flags);
	if (r == 0 && (dirfd == AT_FDCWD || name[0] == '/') && meta(name, !(flags & AT_SYMLINK_NOFOLLOW), &m) == 0)
		fill(st, &m);
	return r;
}

static int allowed(const char *name, int amode, int follow)
{
	struct stat st;
	if ((follow ? __wrap_stat(name, &st) : __wrap_lstat(name, &st)) < 0)
		return -1;
	if (amode == F_OK)
		return 0;
	unsigned bits;
	if (st.st_uid == getuid())
		bits = (st.st_mode >> 6) & 7;
	else if (st.st_gid == getgid())
		bits = (st.st_mode >> 3) & 7;
	else
		bits = st.st_mode & 7;
	unsigned want = (amode & R_OK ? 4 : 0) | (amode & W_OK ? 2 : 0) | (amode & X_OK ? 1 : 0);
	if ((want & ~bits) != 0) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

int __wrap_access(const char *name, int amode) { return allowed(name, amode, 1); }

int __wrap_faccessat(int dirfd, const char *name, int amode, int flags)
{
	if (dirfd != AT_FDCWD && name[0] != '/') {
		errno = ENOTSUP;
		return -1;
	}
	return allowed(name, amode, !(flags & AT_SYMLINK_NOFOLLOW));
}

int __wrap_open(const char *name, int flags, ...)
{
	mode_t mode = 0;
	if (flags & O_CREAT) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	struct meta m;
	int existed = !(flags & O_CREAT) || meta(name, 1, &m) == 0;
	int fd = __real_open(name, flags, mode);
	/* A new file bash asks 0666 for under the starting mask 022 keeps
	 * the mode the host gave it: 0644 in the sandbox, and on a host
	 * mount what the host's umask makes of it (the client's, as for
	 * every other command). Any other mode or mask is set as asked. */
	if (fd >= 0 && !existed && (wasmbox_umask_value() != 022 || (mode & 07777) != 0666)) {
		char buf[PATH_MAX];
		const char *p = absolute(name, buf, sizeof buf);
		if (p)
			wasmbox_meta_chmod(p, (uint32_t)strlen(p), (uint32_t)(mode & ~wasmbox_umask_value() & 07777), 1);
	}
	return fd;
}

int chmod(const char *name, mode_t mode)
{
	char buf[PATH_MAX];
	const char *p = absolute(name, buf, sizeof buf);
	if (!p)
		return -1;
	int32_t e = wasmbox_meta_chmod(p, (uint32_t)strlen(p), (uint32_t)(mode & 07777), 1);
	return e ? fail(e) : 0;
}

int fchmod(int fd, mode_t mode)
{
	errno = fd < 0 ? EBADF : ENOSYS;
	return -1;
}
