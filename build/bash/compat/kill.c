/* wasmbox compat: kill of the process itself is a signal (compat/signal.c:
 * a handler runs, or the default action), not build/posix's exit with
 * 128+sig; kill of another process is build/posix's (proc_kill). bash is
 * linked with --wrap=kill. Process groups are single processes here (no
 * job control): pid 0 and -getpid() mean the process itself. */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

int __real_kill(pid_t, int);

int __wrap_kill(pid_t pid, int sig)
{
	pid_t self = getpid();
	if (pid == 0 || pid == self || pid == -self) {
		if (sig == 0)
			return 0;
		return raise(sig);
	}
	if (pid < -1)
		pid = -pid;
	return __real_kill(pid, sig);
}

int killpg(pid_t pgrp, int sig)
{
	if (pgrp < 0) {
		errno = EINVAL;
		return -1;
	}
	return __wrap_kill(pgrp ? -pgrp : 0, sig);
}
