/* wasmbox compat: POSIX signals for a WebAssembly process.
 *
 * A wasm instance cannot be interrupted between two instructions, so a
 * signal is an event delivered at a safe point, the places where a kernel
 * would also deliver one to a process that made a system call:
 *   - raise() and kill() of the process itself deliver at once (if not
 *     blocked), as kill(getpid(), sig) does;
 *   - unblocking a pending signal (sigprocmask, sigsuspend) delivers it;
 *   - a write to a pipe whose reader is gone (EPIPE) posts SIGPIPE on
 *     return from write/writev (compat/write.c), as the kernel does;
 *   - alarm()'s SIGALRM is posted when a safe point finds its time passed;
 *   - SIGCHLD is posted when a safe point finds a child ended (and the
 *     program handles SIGCHLD).
 * Default actions: SIGCHLD, SIGURG, SIGWINCH, SIGCONT are ignored; the
 * stop signals are ignored (no job control in the sandbox); every other
 * signal ends the process with status 128+sig (what the parent's wait
 * sees as the signal's status in the sandbox, see build/posix).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS 65
#define BIT(s) (1ULL << ((s) - 1))
#define UNBLOCKABLE (BIT(SIGKILL) | BIT(SIGSTOP))

void __SIG_ERR(int sig) { (void)sig; }
void __SIG_IGN(int sig) { (void)sig; }

static void (*handlers[NS])(int);
static int hflags[NS];
static sigset_t hmask[NS];
static sigset_t blocked, pending;
static struct timespec alarm_at; /* zero: no alarm armed */

static int valid(int sig) { return sig > 0 && sig < NS && sig <= 64; }

static void default_action(int sig)
{
	switch (sig) {
	case SIGCHLD: case SIGURG: case SIGWINCH: case SIGCONT:
	case SIGSTOP: case SIGTSTP: case SIGTTIN: case SIGTTOU:
		return;
	}
	_Exit(128 + sig);
}

static void deliver(int sig)
{
	void (*h)(int) = handlers[sig];
	if (sig == SIGKILL || h == SIG_DFL) {
		default_action(sig);
		return;
	}
	if (h == SIG_IGN || h == SIG_ERR)
		return;
	sigset_t saved = blocked;
	blocked |= hmask[sig];
	if (!(hflags[sig] & SA_NODEFER))
		blocked |= BIT(sig);
	blocked &= ~UNBLOCKABLE;
	if (hflags[sig] & SA_RESETHAND)
		handlers[sig] = SIG_DFL;
	h(sig);
	blocked = saved;
}

static void check_alarm(void)
{
	if (alarm_at.tv_sec == 0 && alarm_at.tv_nsec == 0)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec > alarm_at.tv_sec || (now.tv_sec == alarm_at.tv_sec && now.tv_nsec >= alarm_at.tv_nsec)) {
		alarm_at.tv_sec = alarm_at.tv_nsec = 0;
		pending |= BIT(SIGALRM);
	}
}

int __wb_child_ended(void); /* build/posix */

/* check_children posts SIGCHLD when a child ended since the last check
 * and the program handles it (bash's job table reaps in its handler). */
static void check_children(void)
{
	void (*h)(int) = handlers[SIGCHLD];
	if (h == SIG_DFL || h == SIG_IGN || h == SIG_ERR)
		return;
	if (__wb_child_ended())
		pending |= BIT(SIGCHLD);
}

void wasmbox_signal_deliver(void)
{
	check_alarm();
	check_children();
	for (;;) {
		sigset_t ready = pending & ~blocked;
		if (!ready)
			return;
		int sig = __builtin_ctzll(ready) + 1;
		pending &= ~BIT(sig);
		deliver(sig);
	}
}

void wasmbox_signal_post(int sig)
{
	if (!valid(sig))
		return;
	if (handlers[sig] == SIG_IGN && sig != SIGKILL)
		return;
	pending |= BIT(sig);
	wasmbox_signal_deliver();
}

int raise(int sig)
{
	if (!valid(sig)) {
		errno = EINVAL;
		return -1;
	}
	wasmbox_signal_post(sig);
	return 0;
}

void (*signal(int sig, void (*h)(int)))(int)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

int sigaction(int sig, const struct sigaction *restrict sa, struct sigaction *restrict old)
{
	if (!valid(sig) || (sa && (sig == SIGKILL || sig == SIGSTOP))) {
		errno = EINVAL;
		return -1;
	}
	if (old) {
		memset(old, 0, sizeof *old);
		old->sa_handler = handlers[sig];
		old->sa_mask = hmask[sig];
		old->sa_flags = hflags[sig];
	}
	if (sa) {
		handlers[sig] = sa->sa_handler;
		hmask[sig] = sa->sa_mask;
		hflags[sig] = sa->sa_flags;
		if (sa->sa_handler == SIG_IGN)
			pending &= ~BIT(sig);
	}
	return 0;
}

int sigprocmask(int how, const sigset_t *restrict set, sigset_t *restrict old)
{
	if (old)
		*old = blocked;
	if (set) {
		switch (how) {
		case SIG_BLOCK: blocked |= *set; break;
		case SIG_UNBLOCK: blocked &= ~*set; break;
		case SIG_SETMASK: blocked = *set; break;
		default: errno = EINVAL; return -1;
		}
		blocked &= ~UNBLOCKABLE;
		wasmbox_signal_deliver();
	}
	return 0;
}

int sigpending(sigset_t *set)
{
	check_alarm();
	*set = pending & blocked;
	return 0;
}

/* sigsuspend delivers what is pending under mask. With nothing pending,
 * a process here can only be woken by its own alarm (no other process
 * can signal it): it sleeps until the alarm; with no alarm armed it
 * returns at once rather than sleep forever. */
int sigsuspend(const sigset_t *mask)
{
	sigset_t saved = blocked;
	blocked = *mask & ~UNBLOCKABLE;
	sigset_t before = pending;
	wasmbox_signal_deliver();
	if (pending == before && !(before & ~blocked) && (alarm_at.tv_sec || alarm_at.tv_nsec) && !(blocked & BIT(SIGALRM))) {
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &alarm_at, NULL);
		wasmbox_signal_deliver();
	}
	blocked = saved;
	wasmbox_signal_deliver();
	errno = EINTR;
	return -1;
}

int siginterrupt(int sig, int flag)
{
	if (!valid(sig)) {
		errno = EINVAL;
		return -1;
	}
	if (flag)
		hflags[sig] &= ~SA_RESTART;
	else
		hflags[sig] |= SA_RESTART;
	return 0;
}

unsigned alarm(unsigned secs)
{
	unsigned left = 0;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (alarm_at.tv_sec || alarm_at.tv_nsec) {
		long long d = (long long)(alarm_at.tv_sec - now.tv_sec);
		left = d > 0 ? (unsigned)d : 1;
	}
	if (secs == 0) {
		alarm_at.tv_sec = alarm_at.tv_nsec = 0;
	} else {
		alarm_at = now;
		alarm_at.tv_sec += secs;
	}
	return left;
}

int sigemptyset(sigset_t *s) { *s = 0; return 0; }
int sigfillset(sigset_t *s) { *s = ~0ULL; return 0; }
int sigaddset(sigset_t *s, int sig)
{
	if (!valid(sig)) { errno = EINVAL; return -1; }
	*s |= BIT(sig);
	return 0;
}
int sigdelset(sigset_t *s, int sig)
{
	if (!valid(sig)) { errno = EINVAL; return -1; }
	*s &= ~BIT(sig);
	return 0;
}
int sigismember(const sigset_t *s, int sig)
{
	if (!valid(sig)) { errno = EINVAL; return -1; }
	return (*s & BIT(sig)) != 0;
}
