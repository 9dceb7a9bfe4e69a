/* The entry points of python.wasm: a wasmbox reactor (see the runtime's
 * SnapshotABI) instead of a WASI command.
 *
 *   _initialize   runs the C constructors, then initializes the interpreter
 *                 (Py_InitializeFromConfig: the import system, site, and
 *                 _wasmbox, which imports the common modules) and returns.
 *   wasmbox_run   runs one `python3 ARGS...`: it reads argv and the
 *                 environment from WASI and hands them to _wasmbox.main,
 *                 which does what CPython's command line does (-c, -m,
 *                 a script, stdin) and returns the exit status.
 *
 * The runtime calls _initialize once, in a fixed world (the standard
 * library mounted, no arguments, no environment), keeps the instance's
 * memory as a snapshot and starts every run from a copy-on-write image of
 * it: a run pays for its own work, not for the interpreter's start. The
 * state a run must not inherit from the snapshot (arguments, environment,
 * working directory, standard streams, the random module's seed) is set up
 * again by _wasmbox.main.
 */
#define PY_SSIZE_T_CLEAN
#include "Python.h"
#include <sched.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <wasi/api.h>

extern void __wasm_call_ctors(void);

/* The process ABI of the wasmbox runtime (runtime.ProcessABI): pipes and
 * concurrent children, for subprocess, os.system and os.popen. */
__attribute__((import_module("wasmbox"), import_name("pipe")))
int32_t wasmbox_pipe(uint32_t *fds);
__attribute__((import_module("wasmbox"), import_name("proc_spawn")))
int32_t wasmbox_proc_spawn(const char *req, uint32_t len, uint32_t *pfd);
__attribute__((import_module("wasmbox"), import_name("proc_kill")))
int32_t wasmbox_proc_kill(uint32_t pfd, int32_t sig);

static PyObject *errno_error(int32_t e) {
	errno = e;
	return PyErr_SetFromErrno(PyExc_OSError);
}

/* _wasmbox_host.pipe() -> (read_fd, write_fd) */
static PyObject *host_pipe(PyObject *self, PyObject *unused) {
	uint32_t fds[2];
	int32_t e = wasmbox_pipe(fds);
	if (e != 0) return errno_error(e);
	return Py_BuildValue("(ii)", (int)fds[0], (int)fds[1]);
}

/* _wasmbox_host.spawn(request: bytes) -> process handle fd */
static PyObject *host_spawn(PyObject *self, PyObject *arg) {
	char *buf;
	Py_ssize_t len;
	if (PyBytes_AsStringAndSize(arg, &buf, &len) < 0) return NULL;
	uint32_t pfd;
	int32_t e = wasmbox_proc_spawn(buf, (uint32_t)len, &pfd);
	if (e != 0) return errno_error(e);
	return PyLong_FromLong((long)pfd);
}

/* _wasmbox_host.kill(handle, signal) */
static PyObject *host_kill(PyObject *self, PyObject *args) {
	int pfd, sig;
	if (!PyArg_ParseTuple(args, "ii", &pfd, &sig)) return NULL;
	int32_t e = wasmbox_proc_kill((uint32_t)pfd, sig);
	if (e != 0) return errno_error(e);
	Py_RETURN_NONE;
}

/* The network ABI of the wasmbox runtime (runtime.NetABI): HTTP/1.1 over
 * connections the host opens, checks and watches (TLS on the host). The
 * Python side is Lib/_wasmbox_net.py (socket and ssl over it). */
__attribute__((import_module("wasmbox"), import_name("net_connect")))
int32_t wasmbox_net_connect(const char *req, uint32_t len, uint8_t *out, uint32_t cap);
__attribute__((import_module("wasmbox"), import_name("net_error")))
int32_t wasmbox_net_error(uint32_t rfd, uint8_t *buf, uint32_t cap, uint32_t *len);

/* _wasmbox_host.net_connect(request: bytes) -> (0, read_fd, write_fd) on
 * success, (76, kind, message: bytes) when the host refused or failed;
 * any other errno raises OSError. */
static PyObject *host_net_connect(PyObject *self, PyObject *arg) {
	char *buf;
	Py_ssize_t len;
	if (PyBytes_AsStringAndSize(arg, &buf, &len) < 0) return NULL;
	uint8_t out[8 + 1024];
	int32_t e = wasmbox_net_connect(buf, (uint32_t)len, out, sizeof out);
	uint32_t a, b;
	memcpy(&a, out, 4);
	memcpy(&b, out + 4, 4);
	if (e == 0) return Py_BuildValue("(iii)", 0, (int)a, (int)b);
	if (e == 76) {
		if (b > sizeof out - 8) b = sizeof out - 8;
		return Py_BuildValue("(iiy#)", 76, (int)a, (const char *)out + 8, (Py_ssize_t)b);
	}
	return errno_error(e);
}

/* _wasmbox_host.net_error(read_fd) -> bytes: why the host ended the
 * connection, empty when it ended cleanly. */
static PyObject *host_net_error(PyObject *self, PyObject *arg) {
	int fd = _PyLong_AsInt(arg);
	if (fd == -1 && PyErr_Occurred()) return NULL;
	uint8_t buf[1024];
	uint32_t n = 0;
	int32_t e = wasmbox_net_error((uint32_t)fd, buf, sizeof buf, &n);
	if (e != 0) return errno_error(e);
	if (n > sizeof buf) n = sizeof buf;
	return PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)n);
}

static PyMethodDef host_methods[] = {
	{"pipe", host_pipe, METH_NOARGS, "pipe() -> (r, w): a pipe of the host"},
	{"spawn", host_spawn, METH_O, "spawn(request) -> handle: start a child (runtime.ProcessABI)"},
	{"kill", host_kill, METH_VARARGS, "kill(handle, signal): stop a child"},
	{"net_connect", host_net_connect, METH_O, "net_connect(request) -> (errno, a, b): a connection of the host (runtime.NetABI)"},
	{"net_error", host_net_error, METH_O, "net_error(read_fd) -> bytes: why the host ended a connection"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef host_module = {
	PyModuleDef_HEAD_INIT, "_wasmbox_host", "The wasmbox host's process and network ABIs.", -1, host_methods,
};

static PyObject *host_init(void) { return PyModule_Create(&host_module); }

static PyObject *run_main; /* _wasmbox.main */

static void fatal(PyStatus st) {
	if (PyStatus_IsExit(st)) {
		exit(st.exitcode);
	}
	Py_ExitStatusException(st);
}

__attribute__((export_name("_initialize"))) void _initialize(void) {
	__wasm_call_ctors();
	if (PyImport_AppendInittab("_wasmbox_host", host_init) < 0) exit(120);
	PyConfig config;
	PyConfig_InitPythonConfig(&config);
	config.parse_argv = 0;
	config.install_signal_handlers = 0;
	config.use_environment = 0;
	config.user_site_directory = 0; /* _wasmbox adds it per run, from $HOME */
	config.safe_path = 1;           /* _wasmbox sets sys.path[0] per run */
	PyStatus st = PyConfig_SetString(&config, &config.program_name, L"python3");
	if (!PyStatus_Exception(st)) st = PyConfig_SetString(&config, &config.home, L"/usr");
	if (!PyStatus_Exception(st)) st = PyConfig_SetString(&config, &config.executable, L"/usr/bin/python3");
	if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
	PyConfig_Clear(&config);
	if (PyStatus_Exception(st)) fatal(st);
	PyObject *mod = PyImport_ImportModule("_wasmbox");
	if (mod != NULL) {
		run_main = PyObject_GetAttrString(mod, "main");
		Py_DECREF(mod);
	}
	if (run_main == NULL) {
		PyErr_Print();
		exit(120);
	}
	/* Keeps WASI's sched_yield imported: the runtime's fuel metering calls
	 * it at loop heads (never reached: the count is never negative). */
	if (run_main == (PyObject *)-1) sched_yield();
}

/* strings returns the NUL-separated strings of a WASI vector as a list. */
static PyObject *strings(char **v, size_t n) {
	PyObject *list = PyList_New((Py_ssize_t)n);
	if (list == NULL) return NULL;
	for (size_t i = 0; i < n; i++) {
		PyObject *s = PyUnicode_DecodeFSDefault(v[i]);
		if (s == NULL) {
			Py_DECREF(list);
			return NULL;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, s);
	}
	return list;
}

static PyObject *wasi_args(void) {
	__wasi_size_t n, size;
	if (__wasi_args_sizes_get(&n, &size) != 0) return PyErr_NoMemory();
	char **v = calloc(n + 1, sizeof(char *));
	char *buf = malloc(size + 1);
	PyObject *list = NULL;
	if (v != NULL && buf != NULL && __wasi_args_get((uint8_t **)v, (uint8_t *)buf) == 0)
		list = strings(v, n);
	else
		PyErr_NoMemory();
	free(v);
	free(buf);
	return list;
}

/* The working directory of a run: wasmbox passes the guest's working
 * directory as $PWD, and a run starts from the snapshot's "/". When chdir
 * fails (the directory was removed), relative names must not resolve
 * against "/" instead (open("f.txt") read or created /f.txt): wasi-libc's
 * working directory becomes $PWD all the same, so relative names resolve
 * under the missing directory and fail with ENOENT, as they do natively
 * in a removed directory (build/ctools/wasi_compat.c). _wasmbox.main's
 * own os.chdir($PWD) then fails and leaves it so. */
extern char *__wasilibc_cwd;

static void run_chdir(char **env, size_t n) {
	const char *pwd = NULL; /* the last PWD=, as in os.environ */
	for (size_t i = 0; i < n; i++)
		if (strncmp(env[i], "PWD=", 4) == 0) pwd = env[i] + 4;
	if (pwd == NULL || pwd[0] != '/') return;
	if (chdir(pwd) != 0) {
		char *dir = strdup(pwd);
		if (dir != NULL) __wasilibc_cwd = dir;
	}
}

static PyObject *wasi_environ(void) {
	__wasi_size_t n, size;
	if (__wasi_environ_sizes_get(&n, &size) != 0) return PyErr_NoMemory();
	char **v = calloc(n + 1, sizeof(char *));
	char *buf = malloc(size + 1);
	PyObject *list = NULL;
	if (v != NULL && buf != NULL && __wasi_environ_get((uint8_t **)v, (uint8_t *)buf) == 0) {
		list = strings(v, n);
		run_chdir(v, n);
	} else
		PyErr_NoMemory();
	free(v);
	free(buf);
	return list;
}

__attribute__((export_name("wasmbox_run"))) int wasmbox_run(void) {
	PyObject *argv = wasi_args();
	PyObject *env = argv ? wasi_environ() : NULL;
	PyObject *res = NULL;
	if (env != NULL) res = PyObject_CallFunctionObjArgs(run_main, argv, env, NULL);
	Py_XDECREF(argv);
	Py_XDECREF(env);
	if (res == NULL) {
		PyErr_Print();
		return 120;
	}
	long code = PyLong_AsLong(res);
	Py_DECREF(res);
	if (code == -1 && PyErr_Occurred()) {
		PyErr_Print();
		return 120;
	}
	return (int)code;
}
