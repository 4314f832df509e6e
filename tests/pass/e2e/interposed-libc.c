// The libc functions the runtime interposes to keep its descriptors safe (runtime/fd_guard.cpp)
// do exactly what libc's do for the program, whichever were looked up first: functions of one type
// (dup3 and socket, epoll_create and epoll_create1) once shared one looked-up address, so a call of
// one ran the other. Run detached and recording, at once and after the runtime's threads started.
// RUN: %shapetrace_cc -O2 %s -o %t
// RUN: %t | FileCheck %s
// RUN: %t wait | FileCheck %s
// RUN: env SHAPETRACE_ENABLED=1 %t wait | FileCheck %s
// RUN: %clang -O2 %s -o %t.plain
// RUN: %t.plain | FileCheck %s
// CHECK: dup3(a, b, O_CLOEXEC) OK
// CHECK-NEXT: socket(AF_UNIX, SOCK_STREAM, 0) OK
// CHECK-NEXT: epoll_create(1) OK
// CHECK-NEXT: epoll_create1(EPOLL_CLOEXEC) OK
// CHECK-NEXT: dup2(a, b) OK
// CHECK-NEXT: eventfd(0, EFD_CLOEXEC) OK
// CHECK-NEXT: pipe2(fds, O_CLOEXEC) OK
// CHECK-NEXT: socketpair(AF_UNIX, SOCK_DGRAM, 0, fds) OK
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

static int socketType(int fd) {
  int type = -1;
  socklen_t length = sizeof type;
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 ? type : -1;
}

static int closeOnExec(int fd) { return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

static void report(const char *what, int good) {
  printf("%s %s\n", what, good ? "OK" : "FAIL");
}

int main(int argc, char **argv) {
  if (argc > 1)
    usleep(20000); // the runtime's threads look their calls up first
  int a = open("/dev/null", O_RDONLY), b = open("/dev/zero", O_RDONLY), fds[2];
  int rc = dup3(a, b, O_CLOEXEC);
  report("dup3(a, b, O_CLOEXEC)", rc == b && closeOnExec(b));
  rc = socket(AF_UNIX, SOCK_STREAM, 0);
  report("socket(AF_UNIX, SOCK_STREAM, 0)", rc >= 0 && socketType(rc) == SOCK_STREAM);
  rc = epoll_create(1);
  report("epoll_create(1)", rc >= 0 && !closeOnExec(rc));
  rc = epoll_create1(EPOLL_CLOEXEC);
  report("epoll_create1(EPOLL_CLOEXEC)", rc >= 0 && closeOnExec(rc));
  rc = dup2(a, b);
  report("dup2(a, b)", rc == b && !closeOnExec(b));
  rc = eventfd(0, EFD_CLOEXEC);
  report("eventfd(0, EFD_CLOEXEC)", rc >= 0 && closeOnExec(rc));
  rc = pipe2(fds, O_CLOEXEC);
  report("pipe2(fds, O_CLOEXEC)", rc == 0 && closeOnExec(fds[0]) && closeOnExec(fds[1]));
  rc = socketpair(AF_UNIX, SOCK_DGRAM, 0, fds);
  report("socketpair(AF_UNIX, SOCK_DGRAM, 0, fds)",
         rc == 0 && socketType(fds[0]) == SOCK_DGRAM && !closeOnExec(fds[1]));
  return 0;
}
