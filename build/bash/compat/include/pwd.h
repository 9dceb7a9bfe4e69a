/* wasmbox compat: the sandbox's one user (uid/gid 1000, "user", home
 * $HOME or /home/user), as the wasmbox shell reports it ($UID, $EUID,
 * $GID, ~). See build/bash/compat/ids.c. */
#ifndef WASMBOX_COMPAT_PWD_H
#define WASMBOX_COMPAT_PWD_H
#include <sys/types.h>
#ifdef __cplusplus
extern "C" {
#endif
struct passwd {
	char *pw_name;
	char *pw_passwd;
	uid_t pw_uid;
	gid_t pw_gid;
	char *pw_gecos;
	char *pw_dir;
	char *pw_shell;
};
struct passwd *getpwuid(uid_t);
struct passwd *getpwnam(const char *);
struct passwd *getpwent(void);
void setpwent(void);
void endpwent(void);
#ifdef __cplusplus
}
#endif
#endif
