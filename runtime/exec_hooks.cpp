// Interposed exec functions: the image that exec replaces ends in the stream, and the image that
// replaces it knows which one it continues.
//
// exec replaces the process image without running a library destructor: the rings and the drain
// are gone, and so is the channel's mapping. So each exec function first ends the image (endImageForExec,
// runtime.cpp): the drain thread sends everything recorded, then a ProcessEnd with reason exec and
// the program's path, and lets the collector read the channel, within SHAPETRACE_EXIT_TIMEOUT_MS
// (not waited for when no collector is there). The new image gets
// SHAPETRACE_EXEC_FROM=<pid>:<this image's key>:<its fork parent's key> in its environment: if it
// is instrumented, its ProcessStart says origin exec and names this image (same pid, a new key).
// Like uftrace's wrappers, an explicit environment (execve, execle, execvpe, fexecve) that lacks
// one of our SHAPETRACE_* variables gets ours, so that a program that execs with a minimal
// environment stays traced where it was traced. If exec fails, the image goes on recording under
// the same key: ExecFailed voids the ProcessEnd.
//
// glibc's exec family calls execve internally (not through the PLT), so each public entry is
// interposed; the list-argument forms are turned into their vector forms and the forms that use
// `environ` into the forms that take an environment. Nothing of this runs in a vfork child (it
// shares its parent's memory and must not allocate): its exec goes through unchanged.
#include "runtime.h"
#include "interpose.h"

#include <alloca.h>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace shapetrace::rt {
namespace {

template <class Fn> Fn next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

// The list forms' arguments: counted first, then copied into `argv` (alloca'd by the caller, as
// glibc does, so that a vfork child allocates nothing).
size_t countArguments(const char* first, va_list rest) {
  size_t count = 1;
  for (const char* arg = first; arg; arg = va_arg(rest, const char*))
    ++count;
  return count; // with the terminating null
}

void copyArguments(char** argv, const char* first, va_list rest, char*** envp) {
  size_t i = 0;
  argv[i++] = const_cast<char*>(first);
  while (argv[i - 1])
    argv[i++] = va_arg(rest, char*);
  if (envp)
    *envp = va_arg(rest, char**);
}

// Builds the argument vector of a list form in `argv`, on the caller's stack.
#define SHAPETRACE_LIST_ARGUMENTS(argv, first, envp)                                               \
  va_list rest;                                                                                    \
  va_start(rest, first);                                                                           \
  va_list counting;                                                                                \
  va_copy(counting, rest);                                                                         \
  char** argv = static_cast<char**>(alloca(countArguments(first, counting) * sizeof(char*)));      \
  va_end(counting);                                                                                \
  copyArguments(argv, first, rest, envp);                                                          \
  va_end(rest)

// "NAME=value" -> whether it sets `name` (NAME= with the '=').
bool sets(const char* entry, const char* name_with_equals, size_t length) {
  return std::strncmp(entry, name_with_equals, length) == 0;
}

// The environment the new image gets.
class ExecEnvironment {
public:
  explicit ExecEnvironment(char* const* envp) : given_(envp) {
    if (!execLinkEntry(link_, sizeof link_))
      return; // not ours to link (a vfork child, or not recording): unchanged
    const size_t link_name = std::strlen(kExecFromVariable) + 1;
    for (char* const* entry = envp; entry && *entry; ++entry)
      if (!sets(*entry, link_, link_name))
        entries_.push_back(*entry);
    // Our SHAPETRACE_* settings that the given environment leaves out.
    for (char** ours = environ; ours && *ours; ++ours) {
      const char* equals = std::strchr(*ours, '=');
      if (std::strncmp(*ours, "SHAPETRACE_", 11) != 0 || !equals || sets(*ours, link_, link_name))
        continue;
      const size_t length = size_t(equals - *ours) + 1;
      bool present = false;
      for (char* const* entry = envp; entry && *entry && !present; ++entry)
        present = sets(*entry, *ours, length);
      if (!present)
        entries_.push_back(*ours);
    }
    entries_.push_back(link_);
    entries_.push_back(nullptr);
  }
  char* const* get() const { return entries_.empty() ? given_ : entries_.data(); }

private:
  char* const* given_;
  char link_[96];
  std::vector<char*> entries_;
};

// Ends the image before exec; if exec returns, it failed, and the image goes on.
class ExecBoundary {
public:
  explicit ExecBoundary(const char* path) : ended_(endImageForExec(path)) {}
  int returned(int rc) {
    if (ended_) {
      const int error = errno;
      execFailed(error);
      errno = error;
    }
    return rc;
  }

private:
  bool ended_;
};

// The program fexecve runs, as /proc names it (empty when it cannot).
std::string pathOfDescriptor(int fd) {
  char link[64], path[PATH_MAX];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  return n > 0 ? std::string(path, size_t(n)) : "fd " + std::to_string(fd);
}

} // namespace
} // namespace shapetrace::rt

using namespace shapetrace::rt;

SHAPETRACE_INTERPOSE int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  const ExecEnvironment environment(envp);
  ExecBoundary boundary(path);
  return boundary.returned(next<decltype(&::execve)>("execve")(path, argv, environment.get()));
}

SHAPETRACE_INTERPOSE int execv(const char* path, char* const argv[]) noexcept {
  return execve(path, argv, environ);
}

SHAPETRACE_INTERPOSE int execvpe(const char* file, char* const argv[],
                                 char* const envp[]) noexcept {
  const ExecEnvironment environment(envp);
  ExecBoundary boundary(file);
  return boundary.returned(next<decltype(&::execvpe)>("execvpe")(file, argv, environment.get()));
}

SHAPETRACE_INTERPOSE int execvp(const char* file, char* const argv[]) noexcept {
  return execvpe(file, argv, environ);
}

SHAPETRACE_INTERPOSE int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
  const ExecEnvironment environment(envp);
  ExecBoundary boundary(pathOfDescriptor(fd).c_str());
  return boundary.returned(next<decltype(&::fexecve)>("fexecve")(fd, argv, environment.get()));
}

SHAPETRACE_INTERPOSE int execveat(int dirfd, const char* path, char* const argv[],
                                  char* const envp[], int flags) noexcept {
  const ExecEnvironment environment(envp);
  // execveat(fd, "", ..., AT_EMPTY_PATH) runs the file fd names (fexecve is made of it).
  const std::string described =
      (flags & AT_EMPTY_PATH) && path[0] == '\0' ? pathOfDescriptor(dirfd) : std::string(path);
  ExecBoundary boundary(described.c_str());
  return boundary.returned(
      next<decltype(&::execveat)>("execveat")(dirfd, path, argv, environment.get(), flags));
}

SHAPETRACE_INTERPOSE int execl(const char* path, const char* arg, ...) noexcept {
  SHAPETRACE_LIST_ARGUMENTS(argv, arg, nullptr);
  return execve(path, argv, environ);
}

SHAPETRACE_INTERPOSE int execlp(const char* file, const char* arg, ...) noexcept {
  SHAPETRACE_LIST_ARGUMENTS(argv, arg, nullptr);
  return execvpe(file, argv, environ);
}

SHAPETRACE_INTERPOSE int execle(const char* path, const char* arg, ...) noexcept {
  char** envp = nullptr;
  SHAPETRACE_LIST_ARGUMENTS(argv, arg, &envp);
  return execve(path, argv, envp);
}
