#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
int main(int argc, char **argv) {
#ifdef YIELD
  if (argc > 100) sched_yield();
#endif
  size_t n = 64 << 20; unsigned char *buf = malloc(n);
  for (size_t i = 0; i < n; i++) buf[i] = (i * 131) % 97 == 0 ? '\n' : 'a';
  long lines = 0;
  for (int r = 0; r < 4; r++) for (size_t i = 0; i < n; i++) lines += buf[i] == '\n';
  printf("%ld\n", lines);
  return 0;
}
