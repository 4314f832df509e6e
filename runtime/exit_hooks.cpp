// Interposed _exit, _Exit and daemon: a process that ends without exit() still sends what it
// recorded and says how it ended.
//
// _exit skips atexit handlers and library destructors, so the runtime's own exit path (the library
// destructor, runtime.cpp) never runs: a process that lives a millisecond, or a fork child that
// _exits after a failed exec, lost what was in its rings. The wrappers first end the image
// (endImageForExit: the drain thread sends everything, a ThreadEnd per thread and a ProcessEnd
// with reason exitImmediately and the status, within SHAPETRACE_EXIT_TIMEOUT_MS; the calling
// thread only waits, so this is safe in a signal handler, where _exit is often called), then call
// the real function. Calls still open are left open, as uftrace shows them.
//
// exit()'s status: the library destructor that sends the ProcessEnd of an ordinary exit cannot
// learn it, and an on_exit handler registered by the runtime's constructor runs too late (shared
// libraries' constructors run before __libc_start_main registers the dynamic linker's
// finalisation, so handlers registered then run after the library destructors). So
// __libc_start_main is interposed to register the handler just before main runs: it then runs
// before the destructors, for an exit() as for a return from main.
//
// glibc's daemon() forks and calls _exit in the parent internally (not through the PLT), so daemon
// is reimplemented here as glibc implements it (fork, the parent _exits with 0, the child calls
// setsid, changes to / unless nochdir, and points 0, 1 and 2 at /dev/null unless noclose), with
// the parent's _exit going through the wrapper. Nothing of this runs in a vfork child.

#include "runtime.h"
#include "interpose.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace {

// What glibc's _exit does, without looking it up (dlsym is not async-signal-safe): exit_group,
// and exit should that ever return.
[[noreturn]] void exitNow(int status) {
  shapetrace::rt::endImageForExit(status);
  for (;;) {
    syscall(SYS_exit_group, status);
    syscall(SYS_exit, status);
  }
}

using MainFn = int (*)(int, char**, char**);
MainFn g_main = nullptr;

// main may be declared with fewer parameters than it is called with, as glibc calls it: not UB
// under the ABI, but UBSan's function check would say it is.
__attribute__((no_sanitize("function"))) int mainAfterOnExit(int argc, char** argv, char** envp) {
  on_exit([](int status, void*) { shapetrace::rt::noteExitStatus(status); }, nullptr);
  return g_main(argc, argv, envp);
}

} // namespace

SHAPETRACE_INTERPOSE int __libc_start_main(MainFn main, int argc, char** argv, void (*init)(),
                                           void (*fini)(), void (*rtld_fini)(), void* stack_end) {
  using StartFn = int (*)(MainFn, int, char**, void (*)(), void (*)(), void (*)(), void*);
  g_main = main;
  const auto real = reinterpret_cast<StartFn>(dlsym(RTLD_NEXT, "__libc_start_main"));
  return real(mainAfterOnExit, argc, argv, init, fini, rtld_fini, stack_end);
}

SHAPETRACE_INTERPOSE void _exit(int status) {
  exitNow(status);
}

SHAPETRACE_INTERPOSE void _Exit(int status) {
  exitNow(status);
}

SHAPETRACE_INTERPOSE int daemon(int nochdir, int noclose) noexcept {
  switch (fork()) {
  case -1:
    return -1;
  case 0:
    break;
  default:
    _exit(0);
  }
  if (setsid() == -1)
    return -1;
  if (!nochdir)
    (void)chdir("/");
  if (!noclose) {
    const int fd = open("/dev/null", O_RDWR, 0);
    struct stat null_device;
    if (fd == -1 || fstat(fd, &null_device) != 0) {
      if (fd != -1)
        close(fd);
      return -1;
    }
    // glibc checks that it is the real null device (character device 1:3).
    if (!S_ISCHR(null_device.st_mode) || null_device.st_rdev != makedev(1, 3)) {
      close(fd);
      errno = ENODEV;
      return -1;
    }
    (void)dup2(fd, STDIN_FILENO);
    (void)dup2(fd, STDOUT_FILENO);
    (void)dup2(fd, STDERR_FILENO);
    if (fd > 2)
      close(fd);
  }
  return 0;
}
