// Variadic virtual method through a this-adjusting thunk (clang emits a musttail thunk),
// covariant return thunks, exception specs, function-try-blocks.
#include <cstdarg>
#include <cstdio>
#include <stdexcept>
struct A { virtual int f(int n, ...) = 0; virtual ~A() {} int pad = 1; };
struct B { virtual int g() { return 2; } virtual ~B() {} long q = 3; };
struct C : B, A {
  int f(int n, ...) override { va_list ap; va_start(ap, n); int s = 0; for (int i = 0; i < n; i++) s += va_arg(ap, int); va_end(ap); return s + (int)q; }
};
struct Base { virtual Base* clone() const { return new Base(*this); } virtual ~Base() {} virtual int id() const { return 0; } };
struct X { virtual ~X() {} long x = 5; };
struct Der : X, Base { Der* clone() const override { return new Der(*this); } int id() const override { return 7; } };
struct Thrower { int v; Thrower(int x) try : v(x ? throw std::runtime_error("ctor") : 1) {} catch (...) { std::puts("ctor catch"); } };
__attribute__((noinline)) int spec(int x) noexcept(false) { if (x > 3) throw x; return x; }
int main() {
  C c; A* a = &c; std::printf("%d\n", a->f(5, 1, 2, 3, 4, 5));
  Der d; Base* b = &d; Base* cl = b->clone(); std::printf("%d\n", cl->id()); delete cl;
  try { Thrower t(1); } catch (const std::exception& e) { std::printf("caught %s\n", e.what()); }
  int s = 0; for (int i = 0; i < 10; i++) try { s += spec(i); } catch (int v) { s += 100 * v; }
  std::printf("%d\n", s);
}
