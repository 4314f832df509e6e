// A program not built with the plugin that links an instrumented shared library: the runtime comes
// after libc in the load order (a dependency of a dependency), so nothing it interposes reaches it
// first. The program runs as without shapetrace (the runtime once called a sigaction it had looked
// up past libc, found nothing, and crashed before main), and the library's calls are recorded.
// RUN: %shapetrace_cc -O1 -shared -fPIC %S/Inputs/plugin_lib.c -o %t.libplugin.so
// RUN: %clang -O1 %s %t.libplugin.so -Wl,-rpath,%T -o %t
// RUN: env SHAPETRACE_ENDPOINT=ipc://%t.absent.sock %t | FileCheck %s
// CHECK: plugin_entry(4) = 13
// RUN: %shapetrace_dump -o %t.events -- %t
// RUN: FileCheck %s --check-prefix=EVENTS --input-file %t.events --match-full-lines --strict-whitespace
// EVENTS:exit status 0
// EVENTS-NEXT:thread main
// EVENTS-NEXT:  enter plugin_entry
// EVENTS-NEXT:    enter plugin_helper
// EVENTS-NEXT:    exit plugin_helper
// EVENTS-NEXT:  exit plugin_entry
// EVENTS-NOT:{{.}}
#include <stdio.h>

int plugin_entry(int x);

int main(void) {
  printf("plugin_entry(4) = %d\n", plugin_entry(4));
  return 0;
}
