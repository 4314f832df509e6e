// _exit right after start (boundaries.test): a process that lives well under a millisecond is in
// the recording with its calls; main is left open.
#include <unistd.h>

static volatile int ready;

__attribute__((noinline)) void setup(void) { ready = 1; }

int main(void) {
  setup();
  _exit(5);
}
