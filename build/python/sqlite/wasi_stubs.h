/* What SQLite's unix VFS needs that wasi-libc lacks (included by -include
 * when the amalgamation is compiled for wasm32-wasi). */
#include <sys/types.h>
int fchmod(int fd, mode_t mode);
int fchown(int fd, uid_t owner, gid_t group);
uid_t geteuid(void);
/* fcntl locks: unused with the unix-none VFS (see wasi_stubs.c), but the
 * unix VFS's code names them. wasi-libc's fcntl fails on these commands. */
#ifndef F_GETLK
#define F_RDLCK 0
#define F_WRLCK 1
#define F_UNLCK 2
#define F_GETLK 1005
#define F_SETLK 1006
#define F_SETLKW 1007
#endif
