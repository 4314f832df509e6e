/* Arguments and results in every register class and on the stack, checked against their
   expected values: the entry hook must keep the argument registers (and aarch64's x8, the
   address of a large struct result), the exit hook the result registers (x0/x1 and v0-v3 of a
   homogeneous float aggregate on aarch64; rax/rdx and xmm0/xmm1 on x86-64). The corners of
   uftrace's s-return, s-struct, s-arg and s-exp-float. */
#include <stdio.h>

struct pair { long a, b; };             /* two registers */
struct triple { long a, b, c; };        /* returned through memory */
struct quad { float x, y, z, w; };      /* four float registers on aarch64 */

__attribute__((noinline)) float half(float x) { return x / 2; }
__attribute__((noinline)) double scale(double x, double y) { return x * y; }
__attribute__((noinline)) struct pair make_pair(long a) { return (struct pair){a, -a}; }
__attribute__((noinline)) struct triple make_triple(long a) {
  return (struct triple){a, a + 1, a + 2};
}
__attribute__((noinline)) struct quad make_quad(float x) {
  return (struct quad){x, x + 1, x + 2, x + 3};
}
__attribute__((noinline)) __int128 wide(__int128 x) { return x << 64 | 7; }
__attribute__((noinline)) long many_ints(long a, long b, long c, long d, long e, long f,
                                                long g, long h, long i, long j) {
  return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
}
__attribute__((noinline)) double many_doubles(double a, double b, double c, double d,
                                                     double e, double f, double g, double h,
                                                     double i, double j) {
  return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
}
__attribute__((noinline)) double mixed(int a, double b, struct triple t, float c,
                                              struct quad q) {
  return a + b + (double)(t.a + t.b + t.c) + c + q.x + q.y + q.z + q.w;
}

int failures;
static void expect(int ok, const char *what) {
  if (!ok) {
    printf("wrong: %s\n", what);
    failures++;
  }
}

int main(void) {
  expect(half(3.0f) == 1.5f, "float result");
  expect(scale(1.5, 4.0) == 6.0, "double result");
  struct pair p = make_pair(9);
  expect(p.a == 9 && p.b == -9, "two-register struct");
  struct triple t = make_triple(100);
  expect(t.a == 100 && t.b == 101 && t.c == 102, "struct returned through memory");
  struct quad q = make_quad(0.5f);
  expect(q.x == 0.5f && q.y == 1.5f && q.z == 2.5f && q.w == 3.5f, "float aggregate");
  __int128 w = wide(3);
  expect((long)(w >> 64) == 3 && (long)w == 7, "__int128");
  expect(many_ints(1, 2, 3, 4, 5, 6, 7, 8, 9, 10) == 385, "ten integer arguments");
  expect(many_doubles(1, 2, 3, 4, 5, 6, 7, 8, 9, 10) == 385.0, "ten double arguments");
  expect(mixed(1, 2.5, t, 0.25f, q) == 1 + 2.5 + 303 + 0.25 + 8, "mixed arguments");
  printf("%s\n", failures ? "some values were wrong" : "all values as expected");
  return failures != 0;
}
