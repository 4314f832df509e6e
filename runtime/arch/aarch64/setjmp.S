// setjmp, _setjmp and __sigsetjmp for AArch64 (see jumps.cpp and ../x86_64/setjmp.S).
//
// A setjmp returns twice into its caller's frame, so it cannot be wrapped by a C function. Each
// entry here saves its argument registers and the link register, calls
// __shapetrace_rt_note_setjmp(env, caller's stack pointer, which) - an ordinary call that returns
// once, with the real function's address - restores x0, x1, x29, x30 and sp exactly as they were at
// entry, and branches to the real function: it sees the caller's return address in x30, as if it
// had been called directly, and returns there both times.
//
// The branch goes through x16 (IP0, free at a call boundary), which a `bti c` landing pad accepts,
// so it also works with branch target identification enabled in the C library.

// which: the index of the real function in jumps.cpp's kSetjmpNames.
.macro SHAPETRACE_SETJMP name, which
  .globl \name
  .type \name, %function
  .p2align 4
\name:
  .cfi_startproc
  hint #34                  // bti c: a valid target of an indirect call
  stp x29, x30, [sp, #-32]!
  .cfi_def_cfa_offset 32
  .cfi_offset 29, -32
  .cfi_offset 30, -24
  mov x29, sp
  stp x0, x1, [sp, #16]     // env, __sigsetjmp's savemask
  add x1, sp, #32           // the caller's stack pointer, also once setjmp has returned
  mov w2, #\which
  bl __shapetrace_rt_note_setjmp
  mov x16, x0
  ldp x0, x1, [sp, #16]
  ldp x29, x30, [sp], #32
  .cfi_def_cfa_offset 0
  .cfi_restore 29
  .cfi_restore 30
  br x16
  .cfi_endproc
  .size \name, . - \name
.endm

  .text
  SHAPETRACE_SETJMP setjmp, 0
  SHAPETRACE_SETJMP _setjmp, 1
  SHAPETRACE_SETJMP __sigsetjmp, 2

// No executable stack.
  .section .note.GNU-stack, "", %progbits
