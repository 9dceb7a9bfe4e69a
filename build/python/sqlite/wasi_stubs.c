/* SQLite on wasm32-wasi (build/python/build.sh).
 *
 * WASI has no file modes, owners or byte-range locks: fchmod and fchown
 * succeed without effect, the effective user is not root (so SQLite does
 * not try to give journals the database's owner), and the default VFS is
 * "unix-none", the unix VFS without locking (a sandbox runs one process at
 * a time against its files; fcntl(F_SETLK) does not exist in WASI). */
#include "wasi_stubs.h"
#include "sqlite3.h"

int fchmod(int fd, mode_t mode) { (void)fd; (void)mode; return 0; }
int fchown(int fd, uid_t owner, gid_t group) { (void)fd; (void)owner; (void)group; return 0; }
uid_t geteuid(void) { return 1000; }

int wasmbox_sqlite_init(const char *unused) {
	(void)unused;
	sqlite3_vfs *v = sqlite3_vfs_find("unix-none");
	return v ? sqlite3_vfs_register(v, 1) : SQLITE_OK;
}
