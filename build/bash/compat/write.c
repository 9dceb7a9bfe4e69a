/* wasmbox compat: SIGPIPE. The host answers a write to a pipe whose
 * reader is gone with EPIPE; a kernel also sends the writer SIGPIPE, whose
 * default action ends it (`yes | head -1` ends `yes`). bash is linked with
 * --wrap=write --wrap=writev so that every write, stdio's included, posts
 * SIGPIPE on EPIPE (compat/signal.c delivers it at this return). */
#include <errno.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

ssize_t __real_write(int, const void *, size_t);
ssize_t __real_writev(int, const struct iovec *, int);

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	ssize_t r = __real_write(fd, buf, n);
	if (r < 0 && errno == EPIPE) {
		wasmbox_signal_post(SIGPIPE);
		errno = EPIPE;
	}
	return r;
}

ssize_t __wrap_writev(int fd, const struct iovec *iov, int n)
{
	ssize_t r = __real_writev(fd, iov, n);
	if (r < 0 && errno == EPIPE) {
		wasmbox_signal_post(SIGPIPE);
		errno = EPIPE;
	}
	return r;
}
