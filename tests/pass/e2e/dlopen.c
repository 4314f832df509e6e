// A dlopen'ed instrumented library: its constructor registers its table at dlopen time, its
// functions get their own ids (names resolve), and calls into it nest inside the caller. Its
// destructor unregisters it at dlclose: switching recording afterwards does not write the unmapped
// library's flag, and the library loaded again records again.
// RUN: %shapetrace_cc -O1 -shared -fPIC %S/Inputs/plugin_lib.c -o %t.plugin.so
// RUN: %shapetrace_cc -O1 %s -ldl -o %t
// RUN: %shapetrace_dump -o %t.events -- %t %t.plugin.so
// RUN: FileCheck %s --input-file %t.events --match-full-lines --strict-whitespace

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter main
// CHECK-NEXT:    enter load_and_call
// CHECK-NEXT:      enter call_plugin
// CHECK-NEXT:        enter plugin_entry
// CHECK-NEXT:          enter plugin_helper
// CHECK-NEXT:          exit plugin_helper
// CHECK-NEXT:        exit plugin_entry
// CHECK-NEXT:      exit call_plugin
// CHECK-NEXT:    exit load_and_call
// CHECK-NEXT:    enter load_and_call
// CHECK-NEXT:      enter call_plugin
// CHECK-NEXT:        enter plugin_entry
// CHECK-NEXT:          enter plugin_helper
// CHECK-NEXT:          exit plugin_helper
// CHECK-NEXT:        exit plugin_entry
// CHECK-NEXT:      exit call_plugin
// CHECK-NEXT:    exit load_and_call
// CHECK-NEXT:  exit main
// CHECK-NOT:{{.}}

#include <dlfcn.h>
#include <shapetrace/shapetrace.h>
#include <stdio.h>

static volatile int last_result;

__attribute__((noinline)) int call_plugin(int (*entry)(int), int x) {
  int result = entry(x);
  last_result = result; // not a tail call: the library's calls nest inside this one
  return result;
}

__attribute__((noinline)) static int load_and_call(const char *path) {
  void *library = dlopen(path, RTLD_NOW);
  if (!library) {
    fprintf(stderr, "%s\n", dlerror());
    return -1;
  }
  int (*entry)(int) = (int (*)(int))dlsym(library, "plugin_entry");
  int result = call_plugin(entry, 4);
  dlclose(library);
  return result;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  if (load_and_call(argv[1]) != 13)
    return 1;
  shapetrace_set_enabled(0);
  shapetrace_set_enabled(1);
  return load_and_call(argv[1]) == 13 ? 0 : 1;
}
