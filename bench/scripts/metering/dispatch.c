#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
int main(int argc, char **argv) {
#ifdef YIELD
  if (argc > 100) sched_yield();
#endif
  unsigned char prog[64]; for (int i = 0; i < 64; i++) prog[i] = (i * 7 + argc) % 5;
  long acc = 0; long n = 150000000;
  for (long i = 0; i < n; i++) {
    switch (prog[i & 63]) {
      case 0: acc += i; break;
      case 1: acc ^= i << 1; break;
      case 2: acc -= i >> 2; break;
      case 3: acc *= 3; break;
      default: acc |= 1; break;
    }
  }
  printf("%ld\n", acc);
  return 0;
}
