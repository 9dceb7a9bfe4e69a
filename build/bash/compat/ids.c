/* wasmbox compat: users and groups. The sandbox has one user, the one the
 * wasmbox shell reports: uid and gid 1000, named "user", home $HOME (or
 * /home/user), shell /bin/bash. There is no /etc/passwd to read and no
 * identity to change: set*id to the same id succeeds, to another fails
 * with EPERM, as for an unprivileged process. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ID 1000

uid_t getuid(void) { return ID; }
uid_t geteuid(void) { return ID; }
gid_t getgid(void) { return ID; }
gid_t getegid(void) { return ID; }

int getgroups(int n, gid_t list[])
{
	if (n == 0)
		return 1;
	if (n < 1) {
		errno = EINVAL;
		return -1;
	}
	list[0] = ID;
	return 1;
}

static int same(unsigned id)
{
	if (id == ID || id == (unsigned)-1)
		return 0;
	errno = EPERM;
	return -1;
}
int setuid(uid_t u) { return same(u); }
int setgid(gid_t g) { return same(g); }
int seteuid(uid_t u) { return same(u); }
int setegid(gid_t g) { return same(g); }
int setresuid(uid_t a, uid_t b, uid_t c) { return same(a) || same(b) || same(c) ? -1 : 0; }
int setresgid(gid_t a, gid_t b, gid_t c) { return same(a) || same(b) || same(c) ? -1 : 0; }

static struct passwd pw;
static int pw_iter;

static struct passwd *user(void)
{
	const char *home = getenv("HOME");
	pw.pw_name = "user";
	pw.pw_passwd = "x";
	pw.pw_uid = ID;
	pw.pw_gid = ID;
	pw.pw_gecos = "user";
	pw.pw_dir = (char *)(home && *home ? home : "/home/user");
	pw.pw_shell = "/bin/bash";
	return &pw;
}

struct passwd *getpwuid(uid_t u) { return u == ID ? user() : NULL; }
struct passwd *getpwnam(const char *name) { return name && strcmp(name, "user") == 0 ? user() : NULL; }
struct passwd *getpwent(void) { return pw_iter++ == 0 ? user() : NULL; }
void setpwent(void) { pw_iter = 0; }
void endpwent(void) { pw_iter = 0; }

static char *no_members[] = {NULL};
static struct group gr = {"user", "x", ID, no_members};
static int gr_iter;

struct group *getgrgid(gid_t g) { return g == ID ? &gr : NULL; }
struct group *getgrnam(const char *name) { return name && strcmp(name, "user") == 0 ? &gr : NULL; }
struct group *getgrent(void) { return gr_iter++ == 0 ? &gr : NULL; }
void setgrent(void) { gr_iter = 0; }
void endgrent(void) { gr_iter = 0; }
