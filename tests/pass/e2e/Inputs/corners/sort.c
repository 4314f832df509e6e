/* libc calling back into the program: qsort's and bsearch's comparisons are traced calls whose
   caller is not instrumented (the corner of uftrace's s-sort). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int compare(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

int main(void) {
  int values[] = {5, 3, 4, 1, 2};
  qsort(values, 5, sizeof values[0], compare);
  int key = 4;
  const int *found = bsearch(&key, values, 5, sizeof values[0], compare);
  printf("%d %d %d %d %d, 4 at %d\n", values[0], values[1], values[2], values[3], values[4],
         found ? (int)(found - values) : -1);
  return values[0] == 1 && values[4] == 5 && found == &values[3] ? 0 : 1;
}
