/* wasmbox compat: terminal control. No descriptor in the sandbox is a
 * terminal, so every call fails with ENOTTY, as on a pipe or a file;
 * ttyname and the process-group calls of job control likewise. */
#include <errno.h>
#include <termios.h>
#include <unistd.h>

static int notty(int fd)
{
	errno = fd < 0 ? EBADF : ENOTTY;
	return -1;
}
int tcgetattr(int fd, struct termios *t) { (void)t; return notty(fd); }
int tcsetattr(int fd, int act, const struct termios *t) { (void)act; (void)t; return notty(fd); }
int tcflow(int fd, int act) { (void)act; return notty(fd); }
int tcflush(int fd, int q) { (void)q; return notty(fd); }
int tcdrain(int fd) { return notty(fd); }
int tcsendbreak(int fd, int d) { (void)d; return notty(fd); }
speed_t cfgetospeed(const struct termios *t) { return t->__c_ospeed; }
speed_t cfgetispeed(const struct termios *t) { return t->__c_ispeed; }
int cfsetospeed(struct termios *t, speed_t s) { t->__c_ospeed = s; return 0; }
int cfsetispeed(struct termios *t, speed_t s) { t->__c_ispeed = s; return 0; }
pid_t tcgetpgrp(int fd) { return notty(fd); }
int tcsetpgrp(int fd, pid_t p) { (void)p; return notty(fd); }
char *ttyname(int fd) { notty(fd); return NULL; }
