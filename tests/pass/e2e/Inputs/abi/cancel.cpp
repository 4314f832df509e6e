// pthread_cancel / pthread_exit forced unwinding through instrumented C++ frames with
// destructors and catch(...) that rethrows (abi::__forced_unwind).
#include <pthread.h>
#include <unistd.h>
#include <cstdio>
#include <atomic>
#include <cxxabi.h>
static std::atomic<int> dtors{0}, rethrown{0};
struct Guard { ~Guard() { dtors++; } };
__attribute__((noinline)) void level3(int cancel) {
  Guard g;
  if (!cancel) pthread_exit(nullptr);
  for (;;) { pthread_testcancel(); usleep(1000); }
}
__attribute__((noinline)) void level2(int c) { Guard g; try { level3(c); } catch (abi::__forced_unwind&) { rethrown++; throw; } }
__attribute__((noinline)) void level1(int c) { Guard g; try { level2(c); } catch (int) { std::puts("never"); } }
void* body(void* arg) { level1((int)(long)arg); return nullptr; }
int main() {
  pthread_t t1, t2;
  pthread_create(&t1, nullptr, body, (void*)0); pthread_join(t1, nullptr);
  pthread_create(&t2, nullptr, body, (void*)1); usleep(20000); pthread_cancel(t2);
  void* r; pthread_join(t2, &r);
  std::printf("dtors=%d rethrown=%d canceled=%d\n", dtors.load(), rethrown.load(), r == PTHREAD_CANCELED);
  return 0;
}
