/* wasmbox compat: what the kernel's execve does with a file before running
 * it, which the executor (build/posix's execve goes to wasmbox.spawn) does
 * not do for a path:
 *   - "#!interp [arg]": run interp [arg] path args... (the interpreter is
 *     found by the executor: #!/usr/bin/env python3, #!/bin/sh);
 *   - a command entry ("#!wasmbox NAME", executor.EntryPrefix) or a wasm
 *     module ("\0asm"): handed to build/posix's execve as it is;
 *   - any other readable file: ENOEXEC, on which bash runs the file as a
 *     shell script itself, as on Linux.
 * bash is linked with --wrap=execve. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int __real_execve(const char *, char *const[], char *const[]);

#define HEAD 256

int __wrap_execve(const char *path, char *const argv[], char *const envp[])
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return __real_execve(path, argv, envp);
	char head[HEAD + 1];
	ssize_t n = read(fd, head, HEAD);
	close(fd);
	if (n < 0)
		return __real_execve(path, argv, envp);
	head[n] = 0;
	if (n >= 4 && memcmp(head, "\0asm", 4) == 0)
		return __real_execve(path, argv, envp);
	if (n >= 10 && memcmp(head, "#!wasmbox ", 10) == 0)
		return __real_execve(path, argv, envp);
	if (n < 2 || head[0] != '#' || head[1] != '!') {
		errno = ENOEXEC;
		return -1;
	}
	/* #!interp [one argument], up to the end of the line. */
	char *p = head + 2, *end = strchr(p, '\n');
	if (!end) {
		if (n == HEAD) { /* a line longer than we read: as Linux, ENOEXEC */
			errno = ENOEXEC;
			return -1;
		}
		end = head + n;
	}
	*end = 0;
	if (end > p && end[-1] == '\r')
		end[-1] = 0;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p) {
		errno = ENOEXEC;
		return -1;
	}
	char *interp = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	char *arg = NULL;
	if (*p) {
		*p++ = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p) {
			arg = p;
			/* Linux passes the rest of the line as one argument, trailing blanks cut. */
			char *q = arg + strlen(arg);
			while (q > arg && (q[-1] == ' ' || q[-1] == '\t'))
				*--q = 0;
		}
	}
	int argc = 0;
	while (argv[argc])
		argc++;
	char **nargv = malloc((size_t)(argc + 3) * sizeof *nargv);
	if (!nargv) {
		errno = E2BIG;
		return -1;
	}
	int k = 0;
	nargv[k++] = interp;
	if (arg)
		nargv[k++] = arg;
	nargv[k++] = (char *)path;
	for (int i = 1; i < argc; i++)
		nargv[k++] = argv[i];
	nargv[k] = NULL;
	int r = __real_execve(interp, nargv, envp);
	int e = errno;
	free(nargv);
	errno = e;
	return r;
}
