/* jq_wasi.h: declarations of what jq 1.6 uses and wasm32-wasi's libc lacks
 * (defined in jq_wasi.c); build.sh includes it in every jq and oniguruma
 * file (-include). */
#ifndef WASMBOX_JQ_WASI_H
#define WASMBOX_JQ_WASI_H
/* glibc's gamma is lgamma (jq's `gamma`); musl in wasi-libc has none. */
double gamma(double);
/* realpath: wasi-libc has none (jq resolves -L paths, modules and
 * $__prog_origin with it). */
char *realpath(const char *restrict path, char *restrict resolved);
#endif
