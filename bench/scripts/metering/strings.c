#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
int main(int argc, char **argv) {
#ifdef YIELD
  if (argc > 100) sched_yield();
#endif
  unsigned long h = 0;
  for (int i = 0; i < 3000000; i++) {
    char *a = malloc(32 + (i & 63));
    snprintf(a, 32, "item-%d", i);
    size_t l = strlen(a);
    char *b = malloc(l * 2 + 1);
    memcpy(b, a, l); memcpy(b + l, a, l); b[2 * l] = 0;
    for (size_t k = 0; k < 2 * l; k++) h = h * 31 + (unsigned char)b[k];
    free(a); free(b);
  }
  printf("%lu\n", h);
  return 0;
}
