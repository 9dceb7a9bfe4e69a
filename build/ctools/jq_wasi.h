/* jq_wasi.h: declarations of what jq 1.6 uses and wasm32-wasi's libc lacks
 * (defined in jq_wasi.c); build.sh includes it first in every file of jq
 * (-include). */
#ifndef WASMBOX_JQ_WASI_H
#define WASMBOX_JQ_WASI_H
/* glibc's gamma is lgamma (jq's `gamma`); musl in wasi-libc has none. */
double gamma(double);
/* realpath: wasi-libc has none (jq resolves -L paths, modules and
 * $__prog_origin with it). */
char *realpath(const char *restrict path, char *restrict resolved);
/* strftime with %Z: wasi-libc has no time zones and its %Z gives "",
 * which jq takes for a failure ("strftime/1: unknown system failure");
 * its times are UTC, and glibc's %Z says "UTC" for them. Every jq file
 * calls jq_wasi_strftime (the declaration in time.h is renamed too). */
#define strftime jq_wasi_strftime
#endif
