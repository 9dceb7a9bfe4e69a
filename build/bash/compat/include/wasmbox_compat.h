/* wasmbox compat: declarations of what wasi-libc lacks and bash calls,
 * forced into every bash source file (-include). Implemented in
 * build/bash/compat/ (one file per area); each says what it answers and why. */
#ifndef WASMBOX_COMPAT_H
#define WASMBOX_COMPAT_H
/* No system header here: configure's checks declare functions like
 * "char select();", which a header pulled in by -include would contradict. */
#include <__typedef_uid_t.h>
#include <__typedef_gid_t.h>
#include <__typedef_mode_t.h>
#ifdef __cplusplus
extern "C" {
#endif
uid_t getuid(void);
uid_t geteuid(void);
gid_t getgid(void);
gid_t getegid(void);
int getgroups(int, gid_t[]);
int setuid(uid_t);
int setgid(gid_t);
int seteuid(uid_t);
int setegid(gid_t);
int setresuid(uid_t, uid_t, uid_t);
int setresgid(gid_t, gid_t, gid_t);
mode_t umask(mode_t);
int chmod(const char *, mode_t);
int fchmod(int, mode_t);
char *ttyname(int);
unsigned alarm(unsigned);
int getpgrp(void);
int setpgid(int, int);
int tcgetpgrp(int);
int tcsetpgrp(int, int);
int gethostname(char *, __SIZE_TYPE__);
#ifdef __cplusplus
}
#endif
#endif
