/* exec through the host's executor: wasmbox.spawn runs the command with
 * this process's current descriptors 0, 1 and 2 and waits for it; this
 * process then exits with its status, as if it had become it (see
 * README.md). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wasi/api.h>
#include "internal.h"

extern char **environ;

struct buf {
	char *p;
	size_t n, cap;
	int oom;
};

static void put(struct buf *b, const char *s, size_t n) {
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t c = b->cap ? b->cap * 2 : 1024;
		while (c < b->n + n)
			c *= 2;
		char *np = realloc(b->p, c);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = c;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

/* A JSON string; bytes of 0x80 and above go as they are (the host
 * refuses a request that is not UTF-8: EINVAL). */
static void str(struct buf *b, const char *s) {
	static const char hex[] = "0123456789abcdef";
	put(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			put(b, e, 2);
		} else if (c < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			put(b, e, 6);
		} else {
			put(b, (const char *)&c, 1);
		}
	}
	put(b, "\"", 1);
}

static void list(struct buf *b, char *const v[]) {
	put(b, "[", 1);
	for (int i = 0; v && v[i]; i++) {
		if (i)
			put(b, ",", 1);
		str(b, v[i]);
	}
	put(b, "]", 1);
}

int execve(const char *path, char *const argv[], char *const envp[]) {
	if (!path || !*path) {
		errno = ENOENT;
		return -1;
	}
	struct buf b = {0};
	/* argv[0] is what the executor resolves: the path asked for. */
	puts_(&b, "{\"argv\":[");
	str(&b, path);
	for (int i = 1; argv && argv[0] && argv[i]; i++) {
		put(&b, ",", 1);
		str(&b, argv[i]);
	}
	puts_(&b, "]");
	/* The name the program sees: a shell execs the path it found for
	 * the name it was given (argv[0] sed for /bin/sed). */
	if (argv && argv[0] && strcmp(argv[0], path) != 0) {
		puts_(&b, ",\"arg0\":");
		str(&b, argv[0]);
	}
	puts_(&b, ",\"env\":");
	list(&b, envp);
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof cwd) && cwd[0] == '/') {
		puts_(&b, ",\"dir\":");
		str(&b, cwd);
	}
	/* Every other open descriptor from 4 up goes to the command too,
	 * as after exec(2), but for the close-on-exec ones (proc.c). */
	puts_(&b, ",\"inherit_fds\":true,\"cloexec\":[");
	static int ce[WB_PREOPEN_FD];
	int n = __wb_cloexec_list(ce, WB_PREOPEN_FD);
	for (int i = 0; i < n; i++) {
		char num[16];
		int k = snprintf(num, sizeof num, i ? ",%d" : "%d", ce[i]);
		put(&b, num, (size_t)k);
	}
	puts_(&b, "]}");
	if (b.oom) {
		free(b.p);
		errno = ENOMEM;
		return -1;
	}
	uint32_t status = 0;
	uint32_t e = __wb_host_spawn(b.p, (uint32_t)b.n, &status);
	free(b.p);
	if (e == 0 || e == 6 /* EAGAIN: nesting too deep, status written */) {
		__wasi_proc_exit(status);
	}
	errno = (int)e;
	return -1;
}

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

/* The executor resolves a bare name itself: no PATH search here. */
int execvpe(const char *file, char *const argv[], char *const envp[]) {
	return execve(file, argv, envp);
}

int execvp(const char *file, char *const argv[]) { return execve(file, argv, environ); }

#define ARGV_FROM_VA(arg, ap, extra)                           \
	int argc = 1;                                              \
	va_start(ap, arg);                                         \
	while (va_arg(ap, char *))                                 \
		argc++;                                                \
	va_end(ap);                                                \
	char **argv = malloc(sizeof(char *) * (argc + 1));         \
	if (!argv) {                                               \
		errno = ENOMEM;                                        \
		return -1;                                             \
	}                                                          \
	argv[0] = (char *)arg;                                     \
	va_start(ap, arg);                                         \
	for (int i = 1; i <= argc; i++)                            \
		argv[i] = i < argc ? va_arg(ap, char *) : (va_arg(ap, char *), NULL); \
	extra;                                                     \
	va_end(ap);

int execl(const char *path, const char *arg, ...) {
	va_list ap;
	ARGV_FROM_VA(arg, ap, (void)0)
	int r = execve(path, argv, environ);
	free(argv);
	return r;
}

int execlp(const char *file, const char *arg, ...) {
	va_list ap;
	ARGV_FROM_VA(arg, ap, (void)0)
	int r = execvp(file, argv);
	free(argv);
	return r;
}

int execle(const char *path, const char *arg, ...) {
	va_list ap;
	char **envp;
	ARGV_FROM_VA(arg, ap, envp = va_arg(ap, char **))
	int r = execve(path, argv, envp);
	free(argv);
	return r;
}
