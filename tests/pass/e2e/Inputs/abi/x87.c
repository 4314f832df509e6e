/* long double, _Complex long double, __int128, __float128, big structs, many stack args, varargs with long double */
#include <stdarg.h>
#include <stdio.h>
#include <complex.h>
struct big { long a[9]; };
struct ld { long double x; };
__attribute__((noinline)) long double ldf(long double a, int n) { long double s = a; for (int i = 0; i < n; i++) s = s * 1.5L + i; return s; }
__attribute__((noinline)) _Complex long double cld(_Complex long double z, int n) { for (int i = 0; i < n; i++) z = z * z + 1; return z; }
__attribute__((noinline)) __int128 i128(__int128 a, __int128 b) { return a * b + (a >> 3); }
__attribute__((noinline)) __float128 f128(__float128 a, int n) { for (int i = 0; i < n; i++) a = a * 3 / 2; return a; }
__attribute__((noinline)) struct big bigf(struct big b, int k) { for (int i = 0; i < 9; i++) b.a[i] += k * i; return b; }
__attribute__((noinline)) struct ld ldstruct(struct ld v, long double w) { v.x += w; return v; }
__attribute__((noinline)) double many(int a, double b, int c, double d, int e, double f, int g, double h, int i, double j, int k, double l, int m, double n, int o, double p, int q, double r, long double s, int t) {
  return a + b + c + d + e + f + g + h + i + j + k + l + m + n + o + p + q + r + (double)s + t; }
__attribute__((noinline)) long double vsum(int n, ...) { va_list ap; va_start(ap, n); long double s = 0;
  for (int i = 0; i < n; i++) { if (i % 3 == 0) s += va_arg(ap, long double); else if (i % 3 == 1) s += va_arg(ap, double); else s += va_arg(ap, int); }
  va_end(ap); return s; }
__attribute__((noinline)) struct big vbig(int n, ...) { va_list ap; va_start(ap, n); struct big r = {{0}}; for (int i = 0; i < n; i++) { struct big b = va_arg(ap, struct big); r.a[i % 9] += b.a[i % 9]; } va_end(ap); return r; }
int main(void) {
  printf("%.6Lf\n", ldf(1.25L, 10));
  _Complex long double z = cld(0.1L + 0.2L * I, 3); printf("%.6Lf %.6Lf\n", creall(z), cimagl(z));
  __int128 v = i128((__int128)1 << 70, 12345); printf("%llx %llx\n", (unsigned long long)(v >> 64), (unsigned long long)v);
  printf("%.3f\n", (double)f128(2, 10));
  struct big b = {{1,2,3,4,5,6,7,8,9}}; b = bigf(b, 3); printf("%ld %ld\n", b.a[0], b.a[8]);
  struct ld l = {1.5L}; printf("%.3Lf\n", ldstruct(l, 2.25L).x);
  printf("%.3f\n", many(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19.5L, 20));
  printf("%.3Lf\n", vsum(9, 1.5L, 2.5, 3, 4.5L, 5.5, 6, 7.5L, 8.5, 9));
  struct big r = vbig(3, b, b, b); printf("%ld %ld\n", r.a[0], r.a[2]);
  return 0;
}
