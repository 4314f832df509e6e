// The second module of static-ctors.cpp: its table is registered by its own constructor and
// its function is called from the first module's static constructor.
#include <cstdio>
__attribute__((noinline)) int helperFromOtherModule(int x) {
  std::fflush(stdout);
  return x + 1;
}
