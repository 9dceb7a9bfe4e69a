/* wasmbox compat: the POSIX signal API over wasi-libc's signal numbers.
 * Signals are delivered only at safe points: when raised by the process
 * itself (raise, kill of its own pid), when a blocked pending signal is
 * unblocked (sigprocmask, sigsuspend), and when a host write reports a
 * closed pipe (SIGPIPE). Nothing interrupts running code asynchronously.
 * See build/bash/compat/signal.c. */
#ifndef WASMBOX_COMPAT_SIGNAL_H
#define WASMBOX_COMPAT_SIGNAL_H
#ifndef _WASI_EMULATED_SIGNAL
#define _WASI_EMULATED_SIGNAL 1
#endif
#include_next <signal.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIG_BLOCK 0
#define SIG_UNBLOCK 1
#define SIG_SETMASK 2
#define SIG_HOLD ((void (*)(int))2)

#ifndef SA_NOCLDSTOP
#define SA_NOCLDSTOP 1
#define SA_NOCLDWAIT 2
#define SA_SIGINFO 4
#define SA_ONSTACK 0x08000000
#define SA_RESTART 0x10000000
#define SA_NODEFER 0x40000000
#define SA_RESETHAND 0x80000000
#endif
#define SA_INTERRUPT 0x20000000

struct sigaction {
	void (*sa_handler)(int);
	sigset_t sa_mask;
	int sa_flags;
};

int kill(pid_t, int);
int killpg(pid_t, int);
int sigemptyset(sigset_t *);
int sigfillset(sigset_t *);
int sigaddset(sigset_t *, int);
int sigdelset(sigset_t *, int);
int sigismember(const sigset_t *, int);
int sigprocmask(int, const sigset_t *__restrict, sigset_t *__restrict);
int sigsuspend(const sigset_t *);
int sigaction(int, const struct sigaction *__restrict, struct sigaction *__restrict);
int sigpending(sigset_t *);
int siginterrupt(int, int);

/* wasmbox_signal_deliver delivers the pending, unblocked signals now
 * (the safe point); wasmbox_signal_post marks sig pending, as a kernel
 * would on an event (a closed pipe), and delivers it when unblocked. */
void wasmbox_signal_deliver(void);
void wasmbox_signal_post(int sig);

#ifdef __cplusplus
}
#endif
#endif
