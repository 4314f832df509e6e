// Three recursions 100,000 calls deep (600,000 events), for deep_recursion.test: the analysis
// and the report stay bounded by --max-depth, not by the depth of the program.
#include <stdio.h>

static volatile int sink;

__attribute__((noinline)) static int down(int n) {
  if (n == 0) return sink;
  const int r = down(n - 1);
  sink += r;
  return r + 1;
}

int main(void) {
  for (int i = 0; i < 3; ++i)
    down(100000);
  printf("recursed 3 times 100000 deep\n");
  return 0;
}
