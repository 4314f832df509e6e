/* varargs + over-aligned locals (dynamic realignment) + force_align_arg_pointer + alloca */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <alloca.h>
__attribute__((noinline, force_align_arg_pointer)) int fa(int n, ...) {
  _Alignas(64) char buf[256]; va_list ap; va_start(ap, n); int s = 0;
  for (int i = 0; i < n; i++) s += va_arg(ap, int); va_end(ap);
  memset(buf, s & 0x7f, sizeof buf); __asm__ volatile("" :: "r"(buf) : "memory");
  return s + buf[3] + (int)(((unsigned long)buf) & 63);
}
__attribute__((noinline)) int dyn(int n, ...) {
  char *p = alloca(n * 16 + 1); va_list ap; va_start(ap, n); int s = 0;
  for (int i = 0; i < n; i++) { double d = va_arg(ap, double); s += (int)d; p[i] = (char)s; }
  va_end(ap); return s + p[0];
}
__attribute__((noinline)) int fwd_v(const char *fmt, va_list ap) { char b[128]; return vsnprintf(b, sizeof b, fmt, ap); }
__attribute__((noinline)) int fwd(const char *fmt, ...) { va_list ap; va_start(ap, fmt); int r = fwd_v(fmt, ap); va_end(ap); return r; }
int main(void) {
  printf("%d\n", fa(10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  printf("%d\n", dyn(12, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0));
  printf("%d\n", fwd("%d %s %f %Lf %d %d %d %d %d %d", 1, "two", 3.0, 4.0L, 5, 6, 7, 8, 9, 10));
  return 0;
}
