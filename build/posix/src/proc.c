/* getpid, getppid, kill, pipe, dup, dup2, fcntl(F_DUPFD) over the host's
 * calls (see README.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>
#include <wasi/api.h>
#include "internal.h"

static uint32_t self[2]; /* pid, ppid; 0 until asked */

void __wb_forget_pid(void) { self[0] = self[1] = 0; }

static int ask_self(void) {
	if (self[0] == 0) {
		uint32_t e = __wb_host_proc_self(self);
		if (e) {
			errno = (int)e;
			self[0] = self[1] = 0;
			return -1;
		}
	}
	return 0;
}

pid_t getpid(void) { return ask_self() < 0 ? 1 : (pid_t)self[0]; }
pid_t getppid(void) { return ask_self() < 0 ? 0 : (pid_t)self[1]; }

int kill(pid_t pid, int sig) {
	if (sig < 0 || sig > 31) {
		errno = EINVAL;
		return -1;
	}
	if (pid == getpid() || pid == 0 || pid == -1) {
		/* This process (or its group: it has no other member it
		 * could name). */
		if (sig == 0)
			return 0;
		__wasi_proc_exit(128 + sig);
	}
	int h = __wb_child_handle(pid < 0 ? -pid : pid);
	if (h < 0) {
		errno = ESRCH;
		return -1;
	}
	if (sig == 0)
		return 0;
	uint32_t e = __wb_host_proc_kill((uint32_t)h, (uint32_t)sig);
	if (e) {
		errno = (int)e;
		return -1;
	}
	return 0;
}

/* Close-on-exec, per descriptor below WB_PREOPEN_FD: exec (exec.c) hands
 * the command every other open descriptor from 4 up (the host's spawn,
 * "inherit_fds"), as exec(2) does. A descriptor's flag is set by
 * F_SETFD/F_DUPFD_CLOEXEC and cleared by F_SETFD, dup, dup2 and pipe on
 * the new descriptor. A flag left on a descriptor that was closed and
 * opened again by open() (wasi-libc's, which has no O_CLOEXEC) keeps it
 * from the command: the safe side (a pipe end lent by mistake could keep
 * a reader from its end of file). */
static unsigned char cloexec[WB_PREOPEN_FD / 8];

static void set_cloexec(int fd, int on) {
	if (fd < 0 || fd >= WB_PREOPEN_FD)
		return;
	if (on)
		cloexec[fd / 8] |= (unsigned char)(1u << (fd % 8));
	else
		cloexec[fd / 8] &= (unsigned char)~(1u << (fd % 8));
}

static int is_cloexec(int fd) {
	return fd >= 0 && fd < WB_PREOPEN_FD && (cloexec[fd / 8] >> (fd % 8)) & 1;
}

int __wb_cloexec_list(int *out, int max) {
	int n = 0;
	for (int fd = 0; fd < WB_PREOPEN_FD && n < max; fd++)
		if (is_cloexec(fd))
			out[n++] = fd;
	return n;
}

int pipe2(int fds[2], int flags) {
	uint32_t p[2];
	uint32_t e = __wb_host_pipe(p);
	if (e) {
		errno = (int)e;
		return -1;
	}
	/* The host's pipes are non-blocking (for Go guests); POSIX's are
	 * blocking unless asked. */
	if (!(flags & O_NONBLOCK)) {
		(void)__wasi_fd_fdstat_set_flags(p[0], 0);
		(void)__wasi_fd_fdstat_set_flags(p[1], 0);
	}
	fds[0] = (int)p[0];
	fds[1] = (int)p[1];
	set_cloexec(fds[0], 0);
	set_cloexec(fds[1], 0);
	return 0;
}

int pipe(int fds[2]) { return pipe2(fds, 0); }

static int dupmin(int fd, int min) {
	uint32_t ret;
	if (fd < 0 || min < 0) {
		errno = fd < 0 ? EBADF : EINVAL;
		return -1;
	}
	uint32_t e = __wb_host_fd_dup((uint32_t)fd, (uint32_t)min, &ret);
	if (e) {
		errno = (int)e;
		return -1;
	}
	set_cloexec((int)ret, 0);
	return (int)ret;
}

int dup(int fd) { return dupmin(fd, 0); }

int dup2(int oldfd, int newfd) {
	if (oldfd < 0 || newfd < 0) {
		errno = EBADF;
		return -1;
	}
	uint32_t e = __wb_host_fd_dup2((uint32_t)oldfd, (uint32_t)newfd);
	if (e) {
		errno = (int)e;
		return -1;
	}
	if (oldfd != newfd)
		set_cloexec(newfd, 0);
	return newfd;
}

int dup3(int oldfd, int newfd, int flags) {
	(void)flags; /* wasi-libc's O_CLOEXEC is 0: dup3 is dup2 here */
	if (oldfd == newfd) {
		errno = EINVAL;
		return -1;
	}
	return dup2(oldfd, newfd);
}

#undef fcntl
int __wasmbox_fcntl(int fd, int cmd, ...) {
	va_list ap;
	va_start(ap, cmd);
	int arg = va_arg(ap, int);
	va_end(ap);
	switch (cmd) {
	case 0: /* F_DUPFD */
		return dupmin(fd, arg);
	case 1030: { /* F_DUPFD_CLOEXEC */
		int r = dupmin(fd, arg);
		set_cloexec(r, 1);
		return r;
	}
	case F_GETFD:
	case F_SETFD: {
		/* wasi-libc answers these for any number, open or not; a shell
		 * asks F_GETFD to learn whether a descriptor is open (bash
		 * saves it before a redirection such as exec 6<f, and the save
		 * then fails on a descriptor that is not there). */
		__wasi_fdstat_t st;
		__wasi_errno_t e = __wasi_fd_fdstat_get((__wasi_fd_t)fd, &st);
		if (e) {
			errno = (int)e;
			return -1;
		}
		if (cmd == F_GETFD)
			return is_cloexec(fd) ? FD_CLOEXEC : 0;
		set_cloexec(fd, arg & FD_CLOEXEC);
		return 0;
	}
	}
	return fcntl(fd, cmd, arg);
}
