/* fork: the child's calls are a process of their own, the parent's go on after waiting for it
   (the corners of uftrace's s-fork and s-fork2). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static int work(int n) { return n * 3; }

__attribute__((noinline)) static int in_child(void) { return work(1) + work(2); }

__attribute__((noinline)) static int wait_for(pid_t child) {
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void) {
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) _exit(in_child());
  int status = wait_for(child);
  printf("child exited %d, parent %d\n", status, work(3));
  return status == 9 ? 0 : 1;
}
