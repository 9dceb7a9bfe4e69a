/* jq_wasi.c: what jq 1.6 uses and wasi-libc (Debian's 2022 snapshot) lacks,
 * linked into jq.wasm only (see README.md). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* (not jq_wasi.h, which renames strftime) */
double gamma(double);
char *realpath(const char *restrict path, char *restrict resolved);
size_t jq_wasi_strftime(char *restrict s, size_t max, const char *restrict fmt, const struct tm *restrict tm);

/* gamma: glibc's gamma() is lgamma() (the log of |Γ(x)|), which is what
 * Debian's jq prints for `gamma`. */
double gamma(double x) { return lgamma(x); }

/* realpath: the absolute, normalised form of path (".", ".." and repeated
 * slashes removed, relative paths taken from the working directory), if
 * the file exists. WASI preview 1 has symbolic links, but a guest sees
 * them only through readlinkat on a preopened directory; jq uses the
 * result to find module files and to name directories, for which the
 * lexical form names the same file unless a component is a link to a
 * directory elsewhere. On failure it returns NULL with errno set, as
 * POSIX's does (jq then keeps the name as given). */
char *realpath(const char *restrict path, char *restrict resolved) {
  char buf[PATH_MAX];
  size_t n = 0;
  struct stat st;

  if (path == NULL) {
    errno = EINVAL;
    return NULL;
  }
  if (path[0] == '\0') {
    errno = ENOENT;
    return NULL;
  }
  if (path[0] != '/') {
    if (getcwd(buf, sizeof buf) == NULL)
      return NULL;
    n = strlen(buf);
    if (n == 1) /* "/" */
      n = 0;
  }
  const char *p = path;
  while (*p) {
    while (*p == '/')
      p++;
    if (!*p)
      break;
    const char *e = p;
    while (*e && *e != '/')
      e++;
    size_t len = (size_t)(e - p);
    if (len == 1 && p[0] == '.') {
      /* nothing */
    } else if (len == 2 && p[0] == '.' && p[1] == '.') {
      while (n > 0 && buf[n - 1] != '/')
        n--;
      if (n > 0)
        n--; /* the slash */
    } else {
      if (n + 1 + len + 1 > sizeof buf) {
        errno = ENAMETOOLONG;
        return NULL;
      }
      buf[n++] = '/';
      memcpy(buf + n, p, len);
      n += len;
    }
    p = e;
  }
  if (n == 0)
    buf[n++] = '/';
  buf[n] = '\0';
  if (stat(buf, &st) != 0)
    return NULL;
  if (resolved == NULL)
    return strdup(buf);
  memcpy(resolved, buf, n + 1);
  return resolved;
}

/* jq_wasi_strftime: strftime with every %Z (not %%Z) replaced by "UTC",
 * the zone of every time here (wasi-libc has no time zones; its own %Z is
 * empty, which jq reports as a failure). A format too long to rewrite
 * goes to strftime as it is. */
size_t jq_wasi_strftime(char *restrict s, size_t max, const char *restrict fmt, const struct tm *restrict tm) {
  char f[1024];
  size_t n = 0;
  for (const char *p = fmt; *p; p++) {
    if (n + 4 > sizeof f)
      return strftime(s, max, fmt, tm);
    if (p[0] == '%' && p[1] == 'Z') {
      memcpy(f + n, "UTC", 3);
      n += 3;
      p++;
    } else if (p[0] == '%' && p[1] != '\0') {
      f[n++] = *p++;
      f[n++] = *p;
    } else {
      f[n++] = *p;
    }
  }
  f[n] = '\0';
  return strftime(s, max, f, tm);
}
