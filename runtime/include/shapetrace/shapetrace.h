/* shapetrace's public C API, for programs compiled with the shapetrace clang plugin.
 *
 * Everything here is optional: a program traced by shapetrace needs no source change. Include this
 * header to annotate requests, name threads, switch tracing on and off, flush, or keep a function
 * out of the trace. Every function is thread-safe, never throws, and returns a status instead of
 * failing silently. */
#ifndef SHAPETRACE_SHAPETRACE_H
#define SHAPETRACE_SHAPETRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Keeps a function out of the trace: the plugin inserts no hooks into it. Use it on functions that
 * must not be traced (signal trampolines, code that runs before the runtime can, hot helpers you do
 * not care about).
 *
 * It is clang's xray_never_instrument attribute, which reaches the IR as the function attribute
 * "function-instrument"="xray-never" and changes nothing else (XRay, if also used, skips the
 * function too). An annotate("shapetrace_no_instrument") attribute is honoured as well, but it
 * lists the function in @llvm.global.annotations, which keeps an out-of-line copy of a static
 * function alive even where every call was inlined. Compilers without the attribute ignore the
 * macro. */
#if defined(__has_attribute)
#if __has_attribute(xray_never_instrument)
#define SHAPETRACE_NO_INSTRUMENT __attribute__((xray_never_instrument))
#endif
#endif
#ifndef SHAPETRACE_NO_INSTRUMENT
#define SHAPETRACE_NO_INSTRUMENT
#endif

typedef enum shapetrace_status {
  SHAPETRACE_OK = 0,
  SHAPETRACE_NOT_RUNNING = 1,    /* the runtime is not initialised or was shut down */
  SHAPETRACE_INVALID_ARGUMENT = 2,
  SHAPETRACE_TIMEOUT = 3,        /* flush did not complete in the time given */
  SHAPETRACE_DROPPED = 4,        /* the item could not be queued and was counted as dropped */
} shapetrace_status;

/* Attaches a named integer to the calling thread's trace at this moment, e.g. the size of the
 * request being served, so that the analyzer can relate calls to their inputs. While recording
 * is off (detached from any collector, or switched off) nothing is kept: SHAPETRACE_OK. */
shapetrace_status shapetrace_annotate(const char *key, int64_t value);

/* Names the calling thread in the trace (as shown by the analyzer and report). */
shapetrace_status shapetrace_set_thread_name(const char *name);

/* Switches recording on (non-zero) or off (zero) for the whole process. While off, hooks cost a
 * load and a branch and record nothing. Calls in progress when recording is switched are still
 * balanced in the trace. */
void shapetrace_set_enabled(int enabled);
int shapetrace_is_enabled(void);

/* Sends everything recorded so far and waits up to timeout_ms for it to leave the process. */
shapetrace_status shapetrace_flush(uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* SHAPETRACE_SHAPETRACE_H */
