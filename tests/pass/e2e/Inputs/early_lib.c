// A library whose constructor calls back into the executable that loads it (early-module.c):
// libraries' constructors run before the executable's, so before its module constructor.
void exe_callback(int x);

static volatile int ready;

// Not tail calls, so that the calls nest.
__attribute__((noinline)) static void lib_setup(void) {
  exe_callback(1);
  ready = 1;
}

__attribute__((constructor)) void lib_init(void) {
  lib_setup();
  ready = 2;
}
