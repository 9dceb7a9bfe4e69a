/* Sessions (build/posix/src/session.c): a program that lives across calls
 * of the host, its state kept in its memory between them. */
#ifndef WASMBOX_SESSION_H
#define WASMBOX_SESSION_H

/* wasmbox_session_wait ends the host's current call with result (the
 * answer of the work just done; the first call's result is ignored) and
 * waits, idle, for the next: it returns the operation the host asked for
 * and sets *arg and *len to its argument (a malloc'd buffer the caller
 * frees; may be NULL when len is 0). */
/* wasmbox_session_mode: the host started the program with
 * wasmbox_session_start (not _start). */
int wasmbox_session_mode(void);

int wasmbox_session_wait(int result, char **arg, unsigned *len);

#endif
