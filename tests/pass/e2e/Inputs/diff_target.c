// A service-like loop for the diff end to end (diff.test): 2000 requests, a fifth of them puts.
// Built at -O0, so that every call stays a call (no tail calls).
// With the argument "audit", every put also calls audit(), which takes 20 times as long as a put:
// the change `shapetrace diff` must find, and rank first. With "phases", the plain requests, a
// pause of 300 ms, then the audited ones: two time windows of one recording to compare.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned sink;

__attribute__((noinline)) static void spin(int n) {
  for (int i = 0; i < n; ++i)
    sink += (unsigned)i;
}
__attribute__((noinline)) static void audit(void) { spin(400000); }
__attribute__((noinline)) static void get(void) { spin(2000); }
__attribute__((noinline)) static void put(int audited) {
  spin(20000);
  if (audited) audit();
}
__attribute__((noinline)) static void serve(int i, int audited) {
  if (i % 5 == 0) put(audited);
  else get();
}

int main(int argc, char** argv) {
  const int audited = argc > 1 && strcmp(argv[1], "audit") == 0;
  const int phases = argc > 1 && strcmp(argv[1], "phases") == 0;
  for (int i = 0; i < 2000; ++i)
    serve(i, audited);
  if (phases) {
    usleep(300000);
    for (int i = 0; i < 2000; ++i)
      serve(i, 1);
  }
  printf("served %s\n", phases ? "plain, then with audit" : audited ? "with audit" : "plain");
  return 0;
}
