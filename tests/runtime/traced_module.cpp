// A shared library loaded with dlopen by traced_program: a second module that registers its table
// late, after the runtime has started and sent the first module's table.
#include "shapetrace/abi.h"

namespace {
const __shapetrace_function kFunctions[] = {
    {"module_call", "module_call", "traced_module.cpp", 1, 0},
    {"_Z11module_leafv", "module_leaf()", "traced_module.cpp", 2, 0},
};
uint32_t g_base = SHAPETRACE_UNREGISTERED_BASE;
uint8_t g_image_enabled = 0; // the library's recording flag (abi.h), as the pass emits one
__shapetrace_module g_module = {SHAPETRACE_ABI_VERSION, 2, kFunctions, "traced_module.cpp",
                                &g_base, &g_image_enabled};
__attribute__((constructor)) void registerModule() { __shapetrace_register_module(&g_module); }
__attribute__((destructor)) void unregisterModule() { __shapetrace_unregister_module(&g_module); }
volatile int g_sink = 0;
} // namespace

extern "C" int module_flag() { return __atomic_load_n(&g_image_enabled, __ATOMIC_RELAXED); }

extern "C" void module_call(int n) {
  __shapetrace_enter(g_base + 0);
  for (int i = 0; i < n; ++i) {
    __shapetrace_enter(g_base + 1);
    g_sink = g_sink + 1;
    __shapetrace_exit(g_base + 1);
  }
  __shapetrace_exit(g_base + 0);
}
