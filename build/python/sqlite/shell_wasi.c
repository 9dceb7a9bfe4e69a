/* SQLite's shell (sqlite3.wasm) on wasm32-wasi: linked with shell.c, the
 * amalgamation and wasi_stubs.c (see shell.sh). */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sqlite3.h"
#include <sys/stat.h>
#include <unistd.h>

/* chmod, which WASI lacks, through the wasmbox runtime's metadata call
 * (runtime.MetaABI): the shell's writefile(NAME, DATA, MODE) and .archive
 * set modes with it. */
__attribute__((import_module("wasmbox"), import_name("chmod")))
int32_t wasmbox_chmod(const char *path, uint32_t len, uint32_t mode, uint32_t follow);

int chmod(const char *path, mode_t mode) {
	char buf[PATH_MAX];
	if (path[0] != '/') {
		if (getcwd(buf, sizeof buf) == NULL) return -1;
		size_t n = strlen(buf), m = strlen(path);
		if (n + 1 + m + 1 > sizeof buf) {
			errno = ENAMETOOLONG;
			return -1;
		}
		buf[n] = '/';
		memcpy(buf + n + 1, path, m + 1);
		path = buf;
	}
	int32_t e = wasmbox_chmod(path, (uint32_t)strlen(path), (uint32_t)mode & 07777, 1);
	if (e != 0) {
		errno = e;
		return -1;
	}
	return 0;
}

/* The working directory: a WASI command starts in "/"; wasmbox passes
 * the guest's working directory as $PWD (as Go's wasip1 runtime expects),
 * so relative names (a database, .import FILE, .read FILE) resolve there.
 * When chdir fails (the directory was removed), the names must not
 * resolve against "/" instead (`sqlite3 db` opened or created /db):
 * wasi-libc's working directory becomes $PWD all the same, so relative
 * names resolve under the missing directory and fail with ENOENT, as they
 * do natively in a removed directory (build/ctools/wasi_compat.c). */
extern char *__wasilibc_cwd;

__attribute__((constructor)) static void wasmbox_chdir_pwd(void) {
	const char *pwd = getenv("PWD");
	if (pwd == NULL || pwd[0] != '/') return;
	if (chdir(pwd) != 0) {
		char *dir = strdup(pwd);
		if (dir != NULL) __wasilibc_cwd = dir;
	}
}

/* isatty: wasmbox gives a guest no terminal, but its WASI describes the
 * standard streams as character devices without seek rights, which is
 * what wasi-libc's isatty takes for one: the shell would prompt and print
 * its banner into a pipe. Its -interactive option still asks for them. */
int isatty(int fd) {
	(void)fd;
	errno = ENOTTY;
	return 0;
}

/* Out of memory ends the shell, as the shell's own allocations do ("Error:
 * out of memory", status 1): in wasm, malloc fails only when the memory
 * limit refuses to grow the memory. SQLite would report SQLITE_NOMEM and
 * carry on, and some statements never come back to report it: an
 * aggregate such as group_concat over an endless recursive CTE keeps
 * stepping with its accumulator in error, at the limit, until the
 * deadline. The wasmbox runtime reports the end of a guest that hit its
 * limit as the limit (status 137). wasmbox_shell_init is the shell's
 * SQLITE_SHELL_INIT_PROC, called before sqlite3_initialize. */
static sqlite3_mem_methods sys_mem;

static void out_of_memory(void) {
	fputs("Error: out of memory\n", stderr);
	exit(1);
}

static void *oom_malloc(int n) {
	void *p = sys_mem.xMalloc(n);
	if (p == NULL) out_of_memory();
	return p;
}

static void *oom_realloc(void *old, int n) {
	void *p = sys_mem.xRealloc(old, n);
	if (p == NULL) out_of_memory();
	return p;
}

void wasmbox_shell_init(void) {
	if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sys_mem) == SQLITE_OK) {
		sqlite3_mem_methods m = sys_mem;
		m.xMalloc = oom_malloc;
		m.xRealloc = oom_realloc;
		sqlite3_config(SQLITE_CONFIG_MALLOC, &m);
	}
	sqlite3_initialize();
}

/* The wasmbox runtime meters the loops of a module that imports WASI's
 * sched_yield (it calls it every so many iterations, and ends the guest
 * there when its deadline passes); without the import, wazero's own check
 * at every loop header applies, several times slower in the VDBE's loop.
 * The shell never yields: this keeps the import. */
static volatile int never;

__attribute__((constructor)) static void wasmbox_keep_sched_yield(void) {
	if (never) sched_yield();
}
