/* wasmbox compat: the sandbox's one group (gid 1000, "user"). See
 * build/bash/compat/ids.c. */
#ifndef WASMBOX_COMPAT_GRP_H
#define WASMBOX_COMPAT_GRP_H
#include <sys/types.h>
#ifdef __cplusplus
extern "C" {
#endif
struct group {
	char *gr_name;
	char *gr_passwd;
	gid_t gr_gid;
	char **gr_mem;
};
struct group *getgrgid(gid_t);
struct group *getgrnam(const char *);
struct group *getgrent(void);
void setgrent(void);
void endgrent(void);
#ifdef __cplusplus
}
#endif
#endif
