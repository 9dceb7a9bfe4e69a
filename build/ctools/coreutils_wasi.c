/* coreutils_wasi.c: what GNU coreutils' sort names of POSIX threads and
   processes, for a single-threaded WASI process without children of its
   own. Linked into the coreutils tools (build.sh); compiled with
   coreutils' config.h and gnulib's <pthread.h>.

   sort starts helper threads only when pthread_create succeeds and sorts
   in the calling thread otherwise; with one thread, a mutex is never
   contended and a condition variable is never waited on (the merge
   queue is filled before it is read), so a wait would be a bug: it
   aborts rather than spin. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>

int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) { (void)m; (void)a; return 0; }
int pthread_mutex_lock(pthread_mutex_t *m) { (void)m; return 0; }
int pthread_mutex_unlock(pthread_mutex_t *m) { (void)m; return 0; }
int pthread_mutex_destroy(pthread_mutex_t *m) { (void)m; return 0; }
int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a) { (void)c; (void)a; return 0; }
int pthread_cond_signal(pthread_cond_t *c) { (void)c; return 0; }
int pthread_cond_destroy(pthread_cond_t *c) { (void)c; return 0; }
int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { (void)c; (void)m; abort(); }
int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg)
{
	(void)t; (void)a; (void)f; (void)arg;
	return EAGAIN;
}
int pthread_join(pthread_t t, void **r) { (void)t; (void)r; return ESRCH; }

/* sort --compress-program: no processes of its own (sort: "couldn't
   create process for PROG -d" / "cannot fork"). */
pid_t fork(void) { errno = ENOSYS; return -1; }
pid_t waitpid(pid_t p, int *s, int o) { (void)p; (void)s; (void)o; errno = ECHILD; return -1; }
int execlp(const char *f, const char *a, ...) { (void)f; (void)a; errno = ENOSYS; return -1; }
