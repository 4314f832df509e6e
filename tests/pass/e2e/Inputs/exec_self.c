// exec from main or from a thread (boundaries.test, scripts/test-aarch64): the first image calls
// a function and execs itself with "second"; the second image calls another and exits with
// status 3. `exec_self thread` execs from a second thread while the main thread waits for it.
//
// EXEC_SELF_INTERPRETER=PATH execs `PATH <this program> second` instead: an aarch64 program run
// by qemu-user cannot exec an aarch64 program directly where the kernel has no binfmt_misc entry
// for it (ENOEXEC), so scripts/test-aarch64 names qemu-aarch64-static here and the new image is
// emulated too. The exec is the same exec through the runtime's interposed execv either way.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* self;

__attribute__((noinline)) void before_exec(void) { printf("first image\n"); fflush(stdout); }
__attribute__((noinline)) void in_second_image(void) { printf("second image\n"); }

__attribute__((noinline)) void exec_second(void) {
  const char* interpreter = getenv("EXEC_SELF_INTERPRETER");
  if (interpreter && *interpreter) {
    char* const argv[] = {(char*)interpreter, (char*)self, "second", 0};
    execv(interpreter, argv);
  } else {
    char* const argv[] = {(char*)self, "second", 0};
    execv(self, argv);
  }
  perror("exec");
  _exit(127);
}

__attribute__((noinline)) void* exec_from_thread(void* unused) {
  (void)unused;
  exec_second();
  return 0;
}

int main(int argc, char** argv) {
  self = argv[0];
  if (argc > 1 && strcmp(argv[1], "second") == 0) {
    in_second_image();
    return 3;
  }
  before_exec();
  if (argc > 1 && strcmp(argv[1], "thread") == 0) {
    pthread_t thread;
    pthread_create(&thread, 0, exec_from_thread, 0);
    pthread_join(thread, 0);
  }
  exec_second();
  return 1;
}
