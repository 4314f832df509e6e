// exec from main or from a thread (boundaries.test): the first image calls a function and execs
// itself with "second"; the second image calls another and exits with status 3.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char* self;

__attribute__((noinline)) void before_exec(void) { printf("first image\n"); fflush(stdout); }
__attribute__((noinline)) void in_second_image(void) { printf("second image\n"); }

__attribute__((noinline)) void exec_second(void) {
  execl(self, self, "second", (char*)0);
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
  if (argc > 1) {
    in_second_image();
    return 3;
  }
  before_exec();
  if (getenv("EXEC_FROM_THREAD")) {
    pthread_t thread;
    pthread_create(&thread, 0, exec_from_thread, 0);
    pthread_join(thread, 0);
  }
  exec_second();
  return 1;
}
