/* mawk's children on wasm32-wasi: system(), `print | "cmd"` and
 * `"cmd" | getline` through the wasmbox runtime's process ABI
 * (runtime.ProcessABI: wasmbox.pipe, wasmbox.proc_spawn), in place of
 * fork, pipe, dup and wait, which WASI lacks. The children run `sh -c CMD`
 * in the same sandbox, as /bin/sh -c would (patches/mawk-wasi-pipes.patch
 * calls these from files.c). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wasi/api.h>

__attribute__((import_module("wasmbox"), import_name("pipe")))
int32_t wasmbox_pipe_(uint32_t *fds);
__attribute__((import_module("wasmbox"), import_name("proc_spawn")))
int32_t wasmbox_proc_spawn_(const char *req, uint32_t len, uint32_t *pfd);

/* json_string appends s as a JSON string to b (size at least 6*len+3). */
static char *json_string(char *b, const char *s) {
	*b++ = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			*b++ = '\\';
			*b++ = (char)c;
		} else if (c < 0x20) {
			b += sprintf(b, "\\u%04x", c);
		} else {
			*b++ = (char)c;
		}
	}
	*b++ = '"';
	return b;
}

/* spawn starts `sh -c cmd` with the given stdin and stdout descriptors and
 * returns its process handle, or -1 with errno set. */
static int spawn(const char *cmd, int in, int out) {
	size_t n = strlen(cmd);
	char *req = malloc(6 * n + 128);
	if (req == NULL) return -1;
	char *b = req + sprintf(req, "{\"argv\":[\"sh\",\"-c\",");
	b = json_string(b, cmd);
	b += sprintf(b, "],\"stdin\":%d,\"stdout\":%d,\"stderr\":2}", in, out);
	uint32_t pfd;
	int32_t e = wasmbox_proc_spawn_(req, (uint32_t)(b - req), &pfd);
	free(req);
	if (e != 0) {
		errno = e;
		return -1;
	}
	return (int)pfd;
}

/* wasmbox_wait waits for the child of handle to end, closes the handle and
 * returns the child's exit status (128+N when killed by signal N, 127 not
 * found, 126 denied: the runtime's), or -1. */
int wasmbox_wait(int handle) {
	uint8_t buf[8];
	size_t got = 0;
	while (got < sizeof buf) {
		ssize_t n = read(handle, buf + got, sizeof buf - got);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0 || errno != EAGAIN) break;
		__wasi_subscription_t sub;
		memset(&sub, 0, sizeof sub);
		sub.u.tag = __WASI_EVENTTYPE_FD_READ;
		sub.u.u.fd_read.file_descriptor = handle;
		__wasi_event_t ev;
		__wasi_size_t nev;
		if (__wasi_poll_oneoff(&sub, &ev, 1, &nev) != 0) break;
	}
	close(handle);
	if (got < 4) return -1;
	return (int)(buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24);
}

/* wasmbox_popen starts `sh -c cmd` with one end of a new pipe as its
 * standard output (reading) or input (writing), stores its process handle
 * at *handle and returns the other end, blocking, or -1. */
int wasmbox_popen(const char *cmd, int reading, int *handle) {
	uint32_t fds[2];
	int32_t e = wasmbox_pipe_(fds);
	if (e != 0) {
		errno = e;
		return -1;
	}
	int local = (int)fds[reading ? 0 : 1], remote = (int)fds[reading ? 1 : 0];
	int h = reading ? spawn(cmd, 0, remote) : spawn(cmd, remote, 1);
	int saved = errno;
	close(remote);
	if (h < 0) {
		close(local);
		errno = saved;
		return -1;
	}
	/* mawk reads and writes the pipe through stdio, which expects a
	 * blocking descriptor. */
	(void)__wasi_fd_fdstat_set_flags(local, 0);
	*handle = h;
	return local;
}

/* system: the child shares the standard streams (the caller flushed its
 * own). The result is what mawk's wait_status makes of a status: the exit
 * status itself (patches/mawk-wasi-pipes.patch). */
int system(const char *cmd) {
	if (cmd == NULL) return 1; /* a shell is available */
	int h = spawn(cmd, 0, 1);
	if (h < 0) return -1;
	return wasmbox_wait(h);
}
