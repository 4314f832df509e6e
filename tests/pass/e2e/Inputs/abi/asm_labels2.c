/* Inline assembly that defines a symbol, in functions that stay out of line (noinline, or the
   out-of-line caller an always_inline helper lands in): a second body would define each symbol a
   second time and the object would not assemble, so each such function keeps one body (the pass
   gates it in place). One form of definition per function. */
#include <stdio.h>
extern char qt_fence1[], named_local_used[], data_label[], set_sym[], macro_lbl[];
#define MONITOR_ASM_LABEL(name) __asm__ __volatile__(".globl " #name); __asm__ __volatile__(#name ":")
/* 1. qthreads' MONITOR_ASM_LABEL: .globl and the label in two separate asm statements */
__attribute__((noinline)) int v1(int x) { MONITOR_ASM_LABEL(qt_fence1); return x + 1; }
/* 2. a named local label (.L), jumped over */
__attribute__((noinline)) int v2(int x) { __asm__ volatile("jmp .Lv2_skip\n\tnop\n.Lv2_skip:" ::: "memory"); return x + 2; }
/* 3. a label defined in another section */
__attribute__((noinline)) int v3(int x) { __asm__ volatile(".pushsection .data\n.globl data_label\ndata_label: .quad 42\n.popsection"); return x + 3; }
/* 4. a symbol defined by .set / .equ */
__attribute__((noinline)) int v4(int x) { __asm__ volatile(".globl set_sym\n.set set_sym, 0x1234"); return x + 4; }
/* 5. an always_inline helper whose asm defines a label, inlined into an out-of-line caller */
static inline __attribute__((always_inline)) void mark(void) { __asm__ volatile(".globl named_local_used\nnamed_local_used:"); }
__attribute__((noinline)) int v5(int x) { mark(); return x + 5; }
/* 6. a label defined through an assembler macro defined in the same statement */
__attribute__((noinline)) int v6(int x) { __asm__ volatile(".macro deflbl name\n.globl \\name\n\\name:\n.endm\ndeflbl macro_lbl\n.purgem deflbl"); return x + 6; }
/* 7. a label with a name given as an "i"/symbol operand (%c0 pasted into a label) */
__attribute__((noinline)) int v7(int x) { __asm__ volatile(".Lop_%c0:\n\tnop" :: "i"(7)); return x + 7; }
/* 8. a quoted symbol name */
__attribute__((noinline)) int v8(int x) { __asm__ volatile(".globl \"quoted.sym\"\n\"quoted.sym\":\n\tnop"); return x + 8; }
int main(void) {
  printf("%d %d %d %d %d %d %d %d %d %d %d\n", v1(0), v2(0), v3(0), v4(0), v5(0), v6(0), v7(0), v8(0),
         (void *)qt_fence1 != (void *)0, *(long *)data_label == 42, (long)set_sym == 0x1234);
  return 0;
}
