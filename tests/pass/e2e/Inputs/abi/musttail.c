/* a threaded interpreter using clang's [[clang::musttail]] returns */
#include <stdio.h>
typedef long (*op_fn)(const unsigned char *pc, long acc, long steps);
static long op_inc(const unsigned char *pc, long acc, long steps);
static long op_dbl(const unsigned char *pc, long acc, long steps);
static long op_end(const unsigned char *pc, long acc, long steps);
static const op_fn table[] = {op_inc, op_dbl, op_end};
#define NEXT(pc, acc, steps) __attribute__((musttail)) return table[*(pc)]((pc), (acc), (steps))
__attribute__((noinline)) static long op_inc(const unsigned char *pc, long acc, long steps) { acc += 1; pc++; NEXT(pc, acc, steps + 1); }
__attribute__((noinline)) static long op_dbl(const unsigned char *pc, long acc, long steps) { acc = (acc * 2) % 1000003; pc++; NEXT(pc, acc, steps + 1); }
__attribute__((noinline)) static long op_end(const unsigned char *pc, long acc, long steps) { return acc * 1000 + steps % 1000; }
int main(void) {
  static unsigned char prog[2000001]; for (int i = 0; i < 2000000; i++) prog[i] = i % 3 == 0; prog[2000000] = 2;
  printf("%ld\n", table[prog[0]](prog, 0, 0)); return 0;
}
