// A program whose calls throttle.test knows exactly, run with SHAPETRACE_THROTTLE=5:200000000
// (5 calls under 200 ms). dispatch's 5th call throttles it; the flush waits until the drain has
// timed that call, so its next 20 calls are not recorded. note (3 calls) and rare (4) never reach
// the count, nap (250 ms a call) is never short.
#include <shapetrace/shapetrace.h>

#include <stdio.h>
#include <unistd.h>

static int note(int x) { return x + 1; }

static int dispatch(int i) {
  int result = i * 2;
  if (i % 10 == 0) result += note(i);
  return result;
}

static void nap(void) { usleep(250000); }

static int rare(int x) { return x * 3; }

int main(void) {
  int sum = 0;
  for (int i = 0; i < 5; ++i)
    sum += dispatch(i);
  for (int i = 0; i < 5; ++i)
    nap();
  for (int i = 0; i < 4; ++i)
    sum += rare(i);
  if (shapetrace_flush(60000) != SHAPETRACE_OK) {
    fprintf(stderr, "flush failed\n");
    return 1;
  }
  for (int i = 5; i < 25; ++i)
    sum += dispatch(i);
  printf("sum %d\n", sum);
  return 0;
}
