// setjmp, _setjmp and __sigsetjmp for x86-64 (see jumps.cpp).
//
// A setjmp returns twice into its caller's frame, so it cannot be wrapped by a C function (the
// second return would land in a frame that no longer exists). Each entry here saves its argument
// registers, calls __shapetrace_rt_note_setjmp(env, caller's stack pointer, which) - an ordinary
// call that returns once, with the real function's address - restores the registers and the stack
// exactly as they were at entry, and jumps to the real function: it sees the caller's return
// address on top of the stack, as if it had been called directly, and returns there both times.

// which: the index of the real function in jumps.cpp's kSetjmpNames.
.macro SHAPETRACE_SETJMP name, which
  .globl \name
  .type \name, @function
  .p2align 4
\name:
  .cfi_startproc
  endbr64
  pushq %rdi                // env
  .cfi_adjust_cfa_offset 8
  pushq %rsi                // __sigsetjmp's savemask
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp             // the call below needs a 16-byte aligned stack
  .cfi_adjust_cfa_offset 8
  leaq 32(%rsp), %rsi       // the caller's stack pointer once setjmp has returned
  movl $\which, %edx
  call __shapetrace_rt_note_setjmp
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  jmp *%rax
  .cfi_endproc
  .size \name, . - \name
.endm

  .text
  SHAPETRACE_SETJMP setjmp, 0
  SHAPETRACE_SETJMP _setjmp, 1
  SHAPETRACE_SETJMP __sigsetjmp, 2

// No executable stack.
  .section .note.GNU-stack, "", @progbits
