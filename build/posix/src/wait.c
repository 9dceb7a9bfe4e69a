/* waitpid over the process handles of the host's fork (see README.md). */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/wait.h>
#include "internal.h"

#define MAXCHILD 1024

/* What this file keeps between calls is only the live children: a freed
 * slot and the poll arrays are cleared after use, so that a program's
 * memory does not depend on when its children happened to end (the
 * memory image of a deterministic session is the same bytes every time). */

static struct child {
	int pid, handle; /* pid 0: a free slot */
	int noticed;     /* __wb_child_ended reported its end */
} children[MAXCHILD];

/* Process handles live at descriptors from HANDLE_FD up, out of the way
 * of a program's own (a shell's `exec 3>file` must not close one). */
#define HANDLE_FD 1024

void __wb_child_add(int pid, int handle) {
	uint32_t high;
	if (handle < HANDLE_FD && __wb_host_fd_dup((uint32_t)handle, HANDLE_FD, &high) == 0) {
		close(handle);
		handle = (int)high;
	}
	for (int i = 0; i < MAXCHILD; i++)
		if (children[i].pid == 0) {
			children[i].pid = pid;
			children[i].handle = handle;
			children[i].noticed = 0;
			return;
		}
	/* Cannot happen within the host's MaxProcesses; stop the child
	 * rather than lose it. */
	__wb_host_proc_kill((uint32_t)handle, 9);
	close(handle);
}

/* The forked child: its parent's children are not its own. */
void __wb_children_forget(void) {
	for (int i = 0; i < MAXCHILD; i++)
		if (children[i].pid) {
			close(children[i].handle);
			memset(&children[i], 0, sizeof children[i]);
		}
}

int __wb_child_handle(int pid) {
	for (int i = 0; i < MAXCHILD; i++)
		if (children[i].pid == pid)
			return children[i].handle;
	return -1;
}

/* reap reads the result of child i: 1 and the wait status when it has
 * ended, 0 when it runs, -1 on error. */
static int reap(int i, int *status) {
	uint8_t b[8];
	int n = 0;
	while (n < 8) {
		ssize_t r = read(children[i].handle, b + n, 8 - n);
		if (r < 0) {
			if (errno == EAGAIN && n == 0)
				return 0;
			if (errno == EAGAIN)
				continue; /* the host writes the 8 bytes at once */
			return -1;
		}
		if (r == 0) {
			errno = ECHILD;
			return -1;
		}
		n += (int)r;
	}
	uint32_t st = b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
	uint32_t cause = b[4] | b[5] << 8 | b[6] << 16 | (uint32_t)b[7] << 24;
	if (cause == 7 && st > 128 && st < 128 + 32)
		*status = (int)(st - 128); /* killed by proc_kill: signalled */
	else
		*status = (int)((st & 0xff) << 8);
	close(children[i].handle);
	memset(&children[i], 0, sizeof children[i]);
	return 1;
}

pid_t waitpid(pid_t pid, int *status, int options) {
	int st = 0;
	static struct pollfd fds[MAXCHILD]; /* 8 KiB: off the shadow stack */
	for (;;) {
		int n = 0;
		for (int i = 0; i < MAXCHILD; i++) {
			if (children[i].pid == 0 || (pid > 0 && children[i].pid != pid))
				continue;
			pid_t cpid = children[i].pid;
			int r = reap(i, &st);
			if (r < 0) {
				memset(fds, 0, sizeof fds[0] * (size_t)n);
				return -1;
			}
			if (r > 0) {
				memset(fds, 0, sizeof fds[0] * (size_t)n);
				if (status)
					*status = st;
				return cpid;
			}
			fds[n].fd = children[i].handle;
			fds[n].events = POLLIN;
			fds[n].revents = 0;
			n++;
		}
		if (n == 0) {
			errno = ECHILD;
			return -1;
		}
		if (options & WNOHANG) {
			memset(fds, 0, sizeof fds[0] * (size_t)n);
			return 0;
		}
		int pr = poll(fds, (nfds_t)n, -1);
		memset(fds, 0, sizeof fds[0] * (size_t)n);
		if (pr < 0 && errno != EINTR)
			return -1;
	}
}

pid_t wait(int *status) { return waitpid(-1, status, 0); }

pid_t wait3(int *status, int options, void *rusage) {
	(void)rusage;
	return waitpid(-1, status, options);
}

/* __wb_child_ended reports, once per child, that a child has ended and
 * not been waited for: 1 when at least one newly ended since the last
 * call, 0 otherwise. It never blocks. A program that handles SIGCHLD
 * (a shell's job table) posts the signal on it at its safe points, as
 * the kernel would send SIGCHLD when a child exits. */
int __wb_child_ended(void) {
	static struct pollfd fds[MAXCHILD];
	static int idx[MAXCHILD];
	int n = 0;
	for (int i = 0; i < MAXCHILD; i++) {
		if (children[i].pid == 0 || children[i].noticed)
			continue;
		fds[n].fd = children[i].handle;
		fds[n].events = POLLIN;
		fds[n].revents = 0;
		idx[n] = i;
		n++;
	}
	if (n == 0)
		return 0;
	int ended = 0;
	if (poll(fds, (nfds_t)n, 0) > 0)
		for (int k = 0; k < n; k++)
			if (fds[k].revents) {
				children[idx[k]].noticed = 1;
				ended = 1;
			}
	memset(fds, 0, sizeof fds[0] * (size_t)n);
	memset(idx, 0, sizeof idx[0] * (size_t)n);
	return ended;
}
