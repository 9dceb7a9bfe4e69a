/* <pwd.h> for SQLite's shell on wasm32-wasi (build/python/sqlite/shell.sh):
 * wasi-libc has no users. The shell looks up the home directory of getuid()
 * for ~/.sqliterc and ~ in paths; with no entry it uses $HOME. */
#ifndef WASMBOX_PWD_H
#define WASMBOX_PWD_H
#include <sys/types.h>
struct passwd {
	char *pw_name;
	char *pw_dir;
};
static inline uid_t getuid(void) { return 1000; }
static inline struct passwd *getpwuid(uid_t uid) { (void)uid; return 0; }
#endif
