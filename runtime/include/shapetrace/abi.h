/* The binary interface between code instrumented by the shapetrace pass and the runtime.
 *
 * The pass emits, per module, a table of __shapetrace_function records and a module constructor
 * that hands it to __shapetrace_register_module. Registration assigns the module a contiguous range
 * of global function ids and stores its first id in *base_id; every hook call passes
 * (*base_id + local index). Until the constructor has run, *base_id holds
 * SHAPETRACE_UNREGISTERED_BASE, so an event from a module that is not registered yet (only possible
 * when another module's constructor calls into it) is recognisable and never confused with another
 * function.
 *
 * Each module also carries an ELF note (section .note.shapetrace, so in a PT_NOTE segment: name
 * "shapetrace", type SHAPETRACE_MODULE_NOTE_TYPE, a 4-byte descriptor holding the signed offset
 * from the descriptor to the module's __shapetrace_module). At its start the runtime walks the
 * notes of every loaded object (dl_iterate_phdr) and registers their modules, so that a module is
 * registered before any of its code can run, even when another library's constructor (or a
 * thread it starts) calls into it before the module's own constructor. The constructor then finds
 * the module registered and does nothing; it still registers modules of objects without notes.
 *
 * This header is C so that the pass, the runtime and C programs agree on it; keep it stable and bump
 * SHAPETRACE_ABI_VERSION on any change. */
#ifndef SHAPETRACE_ABI_H
#define SHAPETRACE_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHAPETRACE_ABI_VERSION 3u
#define SHAPETRACE_UNREGISTERED_BASE 0x80000000u
#define SHAPETRACE_MODULE_NOTE_NAME "shapetrace"
#define SHAPETRACE_MODULE_NOTE_TYPE 1u

/* One function, as the pass knows it at compile time: an instrumented one (flags 0), or one the
 * user's filters left out (flags SHAPETRACE_FUNCTION_EXCLUDED_*), listed after every instrumented
 * function of the module so that the analysis knows what a recording cannot show. An excluded
 * function takes an id like the others; no hook is ever called with it. Added without a new ABI
 * version: a runtime that reads flags as reserved registers an excluded function as one that is
 * never called. */
#define SHAPETRACE_FUNCTION_EXCLUDED_BY_RULE 1u /* an exclude rule, or no include rule, of the rule file */
#define SHAPETRACE_FUNCTION_EXCLUDED_BY_SIZE 2u /* a loop-free leaf under -shapetrace-min-instructions */
struct __shapetrace_function {
  const char *mangled_name;
  const char *demangled_name; /* equal to mangled_name for C functions */
  const char *source_file;    /* "" when the module has no debug information */
  uint32_t line;              /* 0 when unknown */
  uint32_t flags;             /* 0, or one SHAPETRACE_FUNCTION_EXCLUDED_* */
};

/* A module's table, emitted by the pass as a constant. */
struct __shapetrace_module {
  uint32_t abi_version; /* SHAPETRACE_ABI_VERSION of the pass that emitted it */
  uint32_t function_count;
  const struct __shapetrace_function *functions;
  const char *module_id; /* the module's source file name as the compiler saw it */
  uint32_t *base_id;     /* written by registration */
  /* Since version 3: the recording flag this module's code reads, its image's own (a hidden
   * 64-byte __shapetrace_image_enabled, one per executable or shared library). Non-zero while
   * recording is on; the runtime writes it, atomically, while the module is registered. */
  uint8_t *image_enabled;
};

/* Registers a module's function table and writes its first global id to *module->base_id (a
 * module whose base id is already set is left as it is). Thread-safe; called from module
 * constructors, including those of dlopen'ed libraries. */
void __shapetrace_register_module(struct __shapetrace_module *module);

/* Called by the module's destructor (on dlclose, and at exit), which references it weakly and
 * calls it only when the runtime has it: the runtime stops writing the module's image_enabled,
 * which is about to be unmapped. Its functions keep their ids and names (events of them may still
 * wait in the rings). Thread-safe. */
void __shapetrace_unregister_module(struct __shapetrace_module *module);

/* Non-zero while recording is on (SHAPETRACE_ENABLED, shapetrace_set_enabled): the runtime's own
 * copy, which every registered module's image_enabled follows. Code instrumented for ABI version 2
 * loads this one at every function's entry and calls the hooks only when it is set (since version
 * 3, its image's image_enabled, read without the GOT): the exits of a frame are called exactly when
 * its entry was, so a program not recording pays a load and a branch instead of two calls. Only the
 * runtime writes it, always atomically. */
extern uint8_t __shapetrace_enabled;

/* The hooks. function_id is *base_id + the function's index in its module's table.
 * Async-signal-safe, never block, never allocate after the calling thread's first event,
 * preserve errno. */
void __shapetrace_enter(uint32_t function_id);
void __shapetrace_exit(uint32_t function_id);
void __shapetrace_unwind_exit(uint32_t function_id);

/* One argument or the return value of a function chosen at compile time (SHAPETRACE_PASS_ARGS,
 * the `args` rule; docs/pass.md, "Arguments and return values"). The pass calls it, only in those
 * functions, right after __shapetrace_enter (one call per chosen argument) and right before
 * __shapetrace_exit (the return value; never on an unwind exit). `descriptor` is
 * SHAPETRACE_VALUE_DESCRIPTOR(position, type): position N of argN (1-255, `this` is arg1, an sret
 * pointer is not counted), 0 for the return value. `bits`: an integer sign- or zero-extended to 64
 * bits, a pointer's address, or a float or double as the bits of a double. A call whose entry was
 * not recorded records nothing. Added without a new ABI version: modules that do not call it
 * need nothing more of the runtime. */
#define SHAPETRACE_VALUE_SIGNED 0u   /* an integer, shown signed */
#define SHAPETRACE_VALUE_UNSIGNED 1u /* an integer the ABI zero-extends (zeroext, bool) */
#define SHAPETRACE_VALUE_POINTER 2u
#define SHAPETRACE_VALUE_FLOAT 3u    /* float or double, as a double's bits */
#define SHAPETRACE_VALUE_STRING 4u   /* a const char* (FUNCTION@argN/s): bits is its address; the
                                        runtime reads the text, fault-safe, up to its cap (a
                                        std::string_view: __shapetrace_value_view below) */
#define SHAPETRACE_VALUE_RETURN 0u   /* the position of the return value */
#define SHAPETRACE_VALUE_DESCRIPTOR(position, type) ((uint32_t)(position) | ((uint32_t)(type) << 8))
void __shapetrace_value(uint32_t function_id, uint32_t descriptor, uint64_t bits);
/* A std::string_view chosen with `/s` (descriptor type SHAPETRACE_VALUE_STRING): the address of
 * its characters and its length, which the runtime reads in full up to its cap (a NUL among them
 * is part of the text). Recorded as a const char*'s text is, in the same place. */
void __shapetrace_value_view(uint32_t function_id, uint32_t descriptor, uint64_t address,
                             uint64_t length);

#ifdef __cplusplus
}
#endif

#endif /* SHAPETRACE_ABI_H */
