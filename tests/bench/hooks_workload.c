/* The runtime benchmark's workloads, compiled unchanged for every tracer being compared:
 *
 *   hooks_workload fib 32        recursive fib(32): 7,049,155 calls
 *   hooks_workload chain 2000000 a loop of nested non-inlined calls a->b->c->d: 8,000,000 calls
 *
 * Prints "calls=<n> ns=<elapsed> cpu_ns=<this thread's CPU time>" for the workload alone
 * (CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID around it, so tracer start-up and shutdown are not
 * counted; the CPU time excludes time the thread waited for a core, which a loaded machine adds). The empty asm after each call keeps it from becoming a
 * tail call or being folded into a loop, so every variant makes exactly the same calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

NOINLINE long fib(int n) {
  if (n < 2)
    return n;
  long r = fib(n - 1);
  r += fib(n - 2);
  __asm__ volatile("" : "+r"(r));
  return r;
}

static volatile long g_sink;
NOINLINE void d(void) { g_sink = g_sink + 1; }
NOINLINE void c(void) { d(); __asm__ volatile(""); }
NOINLINE void b(void) { c(); __asm__ volatile(""); }
NOINLINE void a(void) { b(); __asm__ volatile(""); }

static long long readNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Calls made by fib(n): 2 fib(n+1) - 1, computed without recursion (this function is traced too). */
static long fibCalls(int n) {
  long previous = 0, current = 1;
  for (int i = 0; i < n; ++i) {
    const long next = previous + current;
    previous = current;
    current = next;
  }
  return 2 * current - 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s fib N | chain ITERATIONS\n", argv[0]);
    return 2;
  }
  const long n = atol(argv[2]);
  long calls = 0;
  long long elapsed = 0, cpu = 0;
  const long long cpu_start = readNs(CLOCK_THREAD_CPUTIME_ID), start = readNs(CLOCK_MONOTONIC);
  if (strcmp(argv[1], "fib") == 0) {
    const long result = fib((int)n);
    elapsed = readNs(CLOCK_MONOTONIC) - start;
    cpu = readNs(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    calls = fibCalls((int)n);
    printf("fib(%ld)=%ld ", n, result);
  } else if (strcmp(argv[1], "chain") == 0) {
    for (long i = 0; i < n; ++i)
      a();
    elapsed = readNs(CLOCK_MONOTONIC) - start;
    cpu = readNs(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    calls = 4 * n;
  } else {
    fprintf(stderr, "%s: unknown workload '%s'\n", argv[0], argv[1]);
    return 2;
  }
  printf("calls=%ld ns=%lld cpu_ns=%lld\n", calls, elapsed, cpu);
  return 0;
}
