// C++20 coroutine generator + exceptions thrown through a coroutine
#include <coroutine>
#include <cstdio>
#include <exception>
#include <stdexcept>
struct Gen {
  struct promise_type {
    int value; std::exception_ptr error;
    Gen get_return_object() { return Gen{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(int v) { value = v; return {}; }
    void return_void() {}
    void unhandled_exception() { error = std::current_exception(); }
  };
  std::coroutine_handle<promise_type> h;
  ~Gen() { if (h) h.destroy(); }
  bool next() { h.resume(); if (h.promise().error) std::rethrow_exception(h.promise().error); return !h.done(); }
};
__attribute__((noinline)) Gen count(int n) { for (int i = 0; i < n; i++) { if (i == 50) throw std::runtime_error("fifty"); co_yield i; } }
int main() {
  long s = 0;
  try { Gen g = count(100); while (g.next()) s += g.h.promise().value; } catch (const std::exception& e) { std::printf("caught %s\n", e.what()); }
  std::printf("%ld\n", s);
}
