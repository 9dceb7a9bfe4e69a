/* forktest: the process model of build/posix, exercised by
 * executor/fork_test.go. Built by build/posix/testdata.sh into
 * forktest.wasm (committed); `make posix-check` proves it is what this
 * source builds. Usage: forktest MODE [ARG]. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wasmbox/posix.h>

static jmp_buf outer, inner;
static int trace;

__attribute__((noinline)) static void down(jmp_buf *to, int depth, int v) {
	volatile char pad[1024]; /* a frame on the shadow stack */
	pad[0] = (char)depth;
	if (depth == 0)
		longjmp(*to, v + pad[0]);
	down(to, depth - 1, v);
	trace = -1; /* never reached */
}

static int mode_setjmp(void) {
	volatile int rounds = 0;
	int r = setjmp(outer);
	if (r == 0) {
		down(&outer, 8, 42);
	}
	printf("across frames: %d\n", r);
	/* nested: inner, then outer from below inner */
	if ((r = setjmp(outer)) == 0) {
		int q = setjmp(inner);
		if (q == 0)
			down(&inner, 3, 5);
		printf("inner: %d\n", q);
		down(&outer, 2, 7);
	}
	printf("outer: %d\n", r);
	/* longjmp(env, 0) returns 1; a jmp_buf copied with memcpy works */
	jmp_buf copy;
	if ((r = setjmp(outer)) == 0) {
		memcpy(copy, outer, sizeof copy);
		longjmp(copy, 0);
	}
	printf("zero: %d\n", r);
	/* many rounds from 1 KiB frames: the stack pointer comes back
	 * every time (a leak would overflow the 64 KiB stack) */
	r = setjmp(outer);
	if (rounds++ < 1000)
		down(&outer, 4, 1);
	printf("rounds: %d trace %d\n", rounds, trace);
	return 0;
}

static int mode_pipe(void) {
	int p[2];
	if (pipe(p) < 0) {
		perror("pipe");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		close(p[0]);
		char msg[64];
		int n = snprintf(msg, sizeof msg, "hello from %d, child of %d\n", getpid(), getppid());
		write(p[1], msg, n);
		exit(7);
	}
	close(p[1]);
	/* the child's process handle is out of the program's way */
	int handle_open = fcntl(1024, F_GETFL) >= 0;
	char buf[256];
	int n = 0, r;
	while ((r = read(p[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += r;
	buf[n] = 0;
	printf("I am %d, read: %s", getpid(), buf);
	int st;
	pid_t w = waitpid(pid, &st, 0);
	printf("waitpid %d: same %d exited %d status %d\n", w == pid, w == pid, WIFEXITED(st), WEXITSTATUS(st));
	printf("handle at 1024: %d, closed by waitpid: %d\n", handle_open, fcntl(1024, F_GETFL) < 0);
	if (waitpid(-1, &st, 0) == -1 && errno == ECHILD)
		printf("no more children\n");
	return 0;
}

static pid_t run(int in, int out, const char *file, char *const argv[]) {
	pid_t pid = fork();
	if (pid == 0) {
		if (in >= 0) {
			dup2(in, 0);
			close(in);
		}
		if (out >= 0) {
			dup2(out, 1);
			close(out);
		}
		execvp(file, argv);
		fprintf(stderr, "%s: %s\n", file, strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	return pid;
}

static int mode_exec(void) {
	int p[2];
	pipe(p);
	char *echo[] = {"echo", "hi", NULL};
	char *tr[] = {"tr", "a-z", "A-Z", NULL};
	pid_t a = run(-1, p[1], "echo", echo);
	close(p[1]);
	pid_t b = run(p[0], -1, "tr", tr);
	close(p[0]);
	int sa, sb;
	waitpid(a, &sa, 0);
	waitpid(b, &sb, 0);
	printf("echo %d, tr %d\n", WEXITSTATUS(sa), WEXITSTATUS(sb));
	char *nope[] = {"no-such-command", NULL};
	pid_t c = run(-1, -1, "no-such-command", nope);
	waitpid(c, &sa, 0);
	printf("missing: %d\n", WEXITSTATUS(sa));
	return 0;
}

static int mode_status(void) {
	int p[2], st;
	pipe(p);
	pid_t pid = fork();
	if (pid == 0)
		exit(3);
	waitpid(pid, &st, 0);
	printf("exit: exited %d status %d\n", WIFEXITED(st), WEXITSTATUS(st));
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		char c;
		read(p[0], &c, 1); /* blocks: the parent never writes */
		_exit(0);
	}
	printf("nohang: %d\n", (int)waitpid(pid, &st, WNOHANG));
	kill(pid, 9);
	waitpid(pid, &st, 0);
	printf("kill: signaled %d signal %d exited %d\n", WIFSIGNALED(st), WTERMSIG(st), WIFEXITED(st));
	printf("kill unknown: %d %s\n", kill(4242, 9), strerror(errno));
	return 0;
}

/* Every process forks until fork fails, then blocks; the first prints
 * why and exits (the run's end then stops the others). */
static int mode_bomb(void) {
	int p[2];
	pipe(p);
	pid_t root = getpid();
	int made = 0;
	for (;;) {
		pid_t pid = fork();
		if (pid < 0) {
			if (getpid() == root) {
				printf("fork failed after %d children: %s\n", made, strerror(errno));
				return 0;
			}
			break;
		}
		if (pid == 0)
			made = 0;
		else
			made++;
	}
	char c;
	read(p[0], &c, 1);
	return 0;
}

static int mode_spin(void) {
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			__asm__ volatile("");
	}
	printf("spinning child %d\n", pid);
	fflush(stdout);
	int st;
	waitpid(pid, &st, 0);
	printf("not reached\n");
	return 0;
}

static char *volatile kept[2]; /* the compiler may not drop the blocks */

static char *grab(size_t mib) {
	char *b = malloc(mib << 20);
	if (b)
		memset(b, 1, mib << 20);
	kept[kept[0] != NULL] = b;
	return b;
}

static int mode_mem(size_t mib) {
	if (!grab(mib)) {
		printf("parent: malloc failed\n");
		return 1;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		printf("fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		if (!grab(mib)) {
			printf("child: malloc of %zu MiB failed\n", mib);
			exit(1);
		}
		printf("child: allocated %zu MiB\n", mib);
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("child exited %d\n", WEXITSTATUS(st));
	return 0;
}

static int mode_dup(void) {
	int fd = open("dup.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "abc", 3);
	int d = dup(fd);
	write(d, "def", 3);
	lseek(fd, 0, SEEK_SET);
	char buf[64] = {0};
	read(d, buf, sizeof buf - 1);
	printf("shared offset: %s\n", buf);
	int hi = fcntl(fd, F_DUPFD, 20);
	printf("F_DUPFD: %d\n", hi);
	int saved = dup(1);
	dup2(fd, 1);
	printf("into the file\n");
	fflush(stdout);
	dup2(saved, 1);
	lseek(fd, 0, SEEK_SET);
	memset(buf, 0, sizeof buf);
	int n = read(fd, buf, sizeof buf - 1);
	printf("file after dup2: %d bytes, tail %s", n, buf + 6);
	printf("dup2 bad: %d %s\n", dup2(999, 5), strerror(errno));
	/* F_GETFD tells an open descriptor from a free one (bash's
	 * redirections ask it before saving a descriptor) */
	errno = 0;
	int free_fd = fcntl(77, F_GETFD);
	printf("F_GETFD free: %d %s, open: %d\n", free_fd, strerror(errno), fcntl(fd, F_GETFD) >= 0);
	/* a forked child writes through the same open file */
	lseek(fd, 0, SEEK_END);
	pid_t pid = fork();
	if (pid == 0) {
		write(fd, "child\n", 6);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	write(fd, "parent\n", 7);
	lseek(fd, 0, SEEK_SET);
	memset(buf, 0, sizeof buf);
	char all[64] = {0};
	read(fd, all, sizeof all - 1);
	printf("after fork: %s", all + 6 + 14);
	return 0;
}

/* deep N: a setjmp and longjmp under N frames; too deep for a jmp_buf or
 * the unwind area, the program stops with a message (status 134). */
static jmp_buf deepbuf;

__attribute__((noinline)) static int rec(int n, volatile int *sink) {
	if (n == 0) {
		if (setjmp(deepbuf))
			return 1;
		longjmp(deepbuf, 1);
	}
	int r = rec(n - 1, sink) + *sink;
	*sink = r;
	return r;
}

static int mode_deep(int n) {
	volatile int sink = 0;
	printf("deep %d: %d\n", n, rec(n, &sink));
	return 0;
}

/* forkbench MIB N: N forks of a process holding MIB MiB more, each
 * child exiting at once; prints the mean time fork took in the parent
 * (unwind, the host's copy of the instance, rewind). */
static long long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int mode_forkbench(size_t mib, int n) {
	if (mib && !grab(mib)) {
		printf("malloc failed\n");
		return 1;
	}
	long long total = 0;
	for (int i = 0; i < n; i++) {
		long long t0 = now_ns();
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		total += now_ns() - t0;
		if (pid < 0) {
			printf("fork: %s\n", strerror(errno));
			return 1;
		}
		waitpid(pid, NULL, 0);
	}
	printf("fork: %lld ns/op, memory %lu KiB\n", total / n, (unsigned long)__builtin_wasm_memory_size(0) * 64);
	return 0;
}

/* nest: setjmp, longjmp and fork inside __wasmbox_nest segments. */
static jmp_buf seg0, seg1;
struct nestarg {
	int level, mode;
	int out;
};

static int nest_body(void *p);

static int nest_inner(void *p) {
	struct nestarg *a = p;
	jmp_buf here;
	volatile int n = 0;
	/* same level: setjmp and longjmp in the segment, many rounds */
	int r = setjmp(here);
	if (n++ < 100)
		down(&here, 2, 1);
	if (a->mode == 1) /* to the segment outside (level 1) */
		down(&seg1, 3, 10);
	if (a->mode == 2) /* to the top (level 0), past two segments */
		down(&seg0, 3, 20);
	if (a->mode == 3) {
		/* fork two segments deep: both go on here, with their
		 * locals; the child's own setjmp works */
		int local = 1234;
		pid_t pid = fork();
		if (pid < 0) {
			printf("fork: %s\n", strerror(errno));
			return -1;
		}
		volatile int m = 0;
		jmp_buf after;
		setjmp(after);
		if (m++ < 3)
			down(&after, 1, 1);
		if (pid == 0) {
			printf("child: local %d rounds %d level %d\n", local, m, a->level);
			fflush(stdout);
			_exit(local % 100);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		printf("parent: local %d rounds %d child status %d\n", local, m, WEXITSTATUS(st));
	}
	return r + n;
}

static int nest_body(void *p) {
	struct nestarg *a = p;
	int r = setjmp(seg1);
	if (r)
		return 1000 + r;
	struct nestarg b = {2, a->mode, 0};
	return __wasmbox_nest(nest_inner, &b);
}

static int mode_nest(void) {
	for (int mode = 0; mode < 4; mode++) {
		volatile int reached = 0;
		int r = setjmp(seg0);
		if (r) {
			printf("mode %d: top %d, reached %d\n", mode, r, reached);
			continue;
		}
		reached = 1;
		struct nestarg a = {1, mode, 0};
		printf("mode %d: %d\n", mode, __wasmbox_nest(nest_body, &a));
	}
	return 0;
}

/* The preopened directories are out of the program's way: open() gives
 * descriptor 3 first, and a program that takes 3 for itself (dup2 onto
 * it, close) still reaches the file system, in a forked child too. */
static int mode_preopen(void) {
	int fd = open("/tmp/p1", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	printf("first open: %d\n", fd);
	int f2 = open("/tmp/p2", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || f2 < 0)
		return 1;
	close(fd);
	printf("dup2 onto 3: %d\n", dup2(f2, 3));
	close(f2);
	write(3, "x", 1);
	close(3);
	int r = open("/tmp/p2", O_RDONLY);
	char b[4] = {0};
	if (r < 0) {
		printf("open after close(3): %s\n", strerror(errno));
		return 0;
	}
	printf("open after close(3): %d, read %zd %s\n", r, read(r, b, sizeof b), b);
	close(r);
	pid_t pid = fork();
	if (pid == 0) {
		int c = open("/tmp/p1", O_RDONLY);
		_exit(c < 0 ? 1 : 0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	printf("child open: exit %d\n", WEXITSTATUS(st));
	return 0;
}

/* inherit: exec hands the command the open descriptors from 4 up (a
 * pipe at 40), but not a close-on-exec one (41), as exec(2) does. */
static int mode_inherit(void) {
	int p[2], q[2];
	if (pipe(p) < 0 || pipe(q) < 0)
		return 1;
	write(p[1], "lent\n", 5);
	write(q[1], "hidden\n", 7);
	close(p[1]);
	close(q[1]);
	dup2(p[0], 40);
	dup2(q[0], 41);
	close(p[0]);
	close(q[0]);
	fcntl(41, F_SETFD, FD_CLOEXEC);
	printf("F_GETFD 40: %d, 41: %d\n", fcntl(40, F_GETFD), fcntl(41, F_GETFD));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = {"cat", "/proc/self/fd/40", "/proc/self/fd/41", NULL};
		execvp("cat", argv);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	printf("cat: exit %d\n", WEXITSTATUS(st));
	return 0;
}

int main(int argc, char **argv) {
	const char *m = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(m, "setjmp"))
		return mode_setjmp();
	if (!strcmp(m, "pipe"))
		return mode_pipe();
	if (!strcmp(m, "exec"))
		return mode_exec();
	if (!strcmp(m, "status"))
		return mode_status();
	if (!strcmp(m, "bomb"))
		return mode_bomb();
	if (!strcmp(m, "spin"))
		return mode_spin();
	if (!strcmp(m, "mem"))
		return mode_mem(argc > 2 ? (size_t)atoi(argv[2]) : 4);
	if (!strcmp(m, "dup"))
		return mode_dup();
	if (!strcmp(m, "deep"))
		return mode_deep(argc > 2 ? atoi(argv[2]) : 10);
	if (!strcmp(m, "nest"))
		return mode_nest();
	if (!strcmp(m, "preopen"))
		return mode_preopen();
	if (!strcmp(m, "inherit"))
		return mode_inherit();
	if (!strcmp(m, "forkbench"))
		return mode_forkbench(argc > 2 ? (size_t)atoi(argv[2]) : 0, argc > 3 ? atoi(argv[3]) : 1);
	fprintf(stderr, "usage: forktest setjmp|pipe|exec|status|bomb|spin|mem MIB|dup|deep N|nest|preopen|inherit|forkbench MIB N\n");
	return 2;
}
