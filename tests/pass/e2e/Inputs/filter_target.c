// A program with a known call count per function, for filter.test: main calls work 10 times,
// work calls hash 100 times, and every fifth work calls log_line once.
#include <stdio.h>

static int hash(int x) { return x * 31 + 7; }

static int log_line(int x) { return printf("log %d\n", x) > 0 ? 1 : 0; }

static int work(int n) {
  int sum = 0;
  for (int i = 0; i < 100; ++i)
    sum += hash(i);
  if (n % 5 == 0) sum += log_line(n);
  return sum;
}

int main(void) {
  int sum = 0;
  for (int n = 0; n < 10; ++n)
    sum += work(n);
  printf("sum %d\n", sum);
  return 0;
}
