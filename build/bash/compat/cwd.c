/* wasmbox compat: the working directory. WASI has none; wasi-libc keeps
 * one in the process, starting at "/". The host tells a guest its
 * directory through wasmbox.getcwd (runtime.CwdABI), and a module that
 * imports it gets no $PWD from the executor: so at start-up bash changes
 * to that directory (or to $PWD when the host gives none), before main:
 * bash is linked with --wrap=__main_argc_argv (its main), which lands here
 * (a constructor in an archive member nothing references is not linked). */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

int __real_chdir(const char *);

/* chdir enters only a directory the sandbox user may search, as chdir(2)
 * does: wasi-libc's chdir only checks that the path opens as a directory,
 * and the host opens for the guest what its owner may read
 * (bash is linked with --wrap=chdir; access is compat/meta.c's). */
int __wrap_chdir(const char *path)
{
	if (path && *path && access(path, X_OK) != 0)
		return -1;
	return __real_chdir(path);
}

__attribute__((import_module("wasmbox"), import_name("getcwd")))
int32_t wasmbox_host_getcwd(char *buf, uint32_t len);

static void start_dir(void)
{
	char buf[4096];
	int32_t n = wasmbox_host_getcwd(buf, sizeof buf - 1);
	if (n > 0 && (uint32_t)n < sizeof buf) {
		buf[n] = 0;
		__real_chdir(buf);
		return;
	}
	const char *pwd = getenv("PWD");
	if (pwd && pwd[0] == '/')
		__real_chdir(pwd);
}

int __real___main_argc_argv(int, char **);

int __wrap___main_argc_argv(int argc, char **argv)
{
	start_dir();
	return __real___main_argc_argv(argc, argv);
}
