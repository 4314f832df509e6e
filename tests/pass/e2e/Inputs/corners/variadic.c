/* Variadic functions (va_list is a structure on both architectures, of different layouts), a
   va_list handed on, and alloca and a variable-length array in traced frames: the corners of
   uftrace's s-variadic and s-alloca. */
#include <alloca.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static long sum_ints(int count, ...) {
  va_list args;
  va_start(args, count);
  long sum = 0;
  for (int i = 0; i < count; i++) sum += va_arg(args, long);
  va_end(args);
  return sum;
}

__attribute__((noinline)) static double sum_doubles(int count, ...) {
  va_list args;
  va_start(args, count);
  double sum = 0;
  for (int i = 0; i < count; i++) sum += va_arg(args, double);
  va_end(args);
  return sum;
}

__attribute__((noinline)) static int format_on(char *out, size_t size, const char *format,
                                               va_list args) {
  return vsnprintf(out, size, format, args);
}

__attribute__((noinline)) static int format(char *out, size_t size, const char *format, ...) {
  va_list args;
  va_start(args, format);
  int length = format_on(out, size, format, args);
  va_end(args);
  return length;
}

__attribute__((noinline)) static size_t fill(char *buffer, size_t size) {
  memset(buffer, 'x', size - 1);
  buffer[size - 1] = '\0';
  return strlen(buffer);
}

__attribute__((noinline)) static size_t on_alloca(size_t size) {
  char *buffer = alloca(size);
  return fill(buffer, size);
}

__attribute__((noinline)) static size_t on_vla(size_t size) {
  char buffer[size];
  return fill(buffer, size);
}

int main(int argc, char **argv) {
  (void)argv;
  char text[64];
  long ints = sum_ints(9, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L);
  double doubles = sum_doubles(9, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5);
  format(text, sizeof text, "%ld %.1f %s %d", ints, doubles, "text", 42);
  size_t lengths = on_alloca(100 + (size_t)argc) + on_vla(200 + (size_t)argc);
  printf("%s %zu\n", text, lengths);
  return strcmp(text, "45 40.5 text 42") == 0 && lengths == 300 ? 0 : 1;
}
