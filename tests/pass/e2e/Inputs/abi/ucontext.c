/* coroutines with swapcontext: the recording sees stacks switch under a thread */
#include <stdio.h>
#include <ucontext.h>
static ucontext_t main_ctx, co_ctx; static char stack[1 << 16]; static int value;
__attribute__((noinline)) static void produce(int i) { value = i; swapcontext(&co_ctx, &main_ctx); }
__attribute__((noinline)) static void co_body(void) { for (int i = 0; i < 1000; i++) produce(i); value = -1; }
__attribute__((noinline)) static int consume(void) { swapcontext(&main_ctx, &co_ctx); return value; }
int main(void) {
  getcontext(&co_ctx); co_ctx.uc_stack.ss_sp = stack; co_ctx.uc_stack.ss_size = sizeof stack; co_ctx.uc_link = &main_ctx;
  makecontext(&co_ctx, co_body, 0); long s = 0; int v;
  while ((v = consume()) >= 0) s += v;
  printf("%ld\n", s); return 0;
}
