/* Included (-include) in SQLite's shell.c on wasm32-wasi: what it calls
 * that wasi-libc does not declare (shell_wasi.c has them). */
#include <sys/types.h>
int chmod(const char *path, mode_t mode);
