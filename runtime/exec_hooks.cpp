// Interposed exec functions: what a process recorded before exec leaves it first.
//
// exec replaces the process image: the rings, the drain and ZeroMQ's queue are gone without a
// library destructor, so a forked child's calls before exec (the common fork / close descriptors /
// exec pattern) were neither recorded nor counted. Each exec function first runs prepareForExec()
// (runtime.cpp): drain cycles until everything recorded was accepted, then the transport is closed
// with the rest of SHAPETRACE_EXIT_TIMEOUT_MS as linger, so the messages reach the collector. Not
// waited for when the collector's ipc socket does not exist. If exec fails, the program goes on
// and the drain reconnects at its next send.
//
// glibc's exec family calls execve internally (not through the PLT), so each public entry is
// interposed; the list-argument forms are turned into their vector forms.
#include "runtime.h"

#include <cstdarg>
#include <dlfcn.h>
#include <unistd.h>
#include <vector>

#define SHAPETRACE_INTERPOSE extern "C" __attribute__((visibility("default")))

namespace {

template <class Fn> Fn next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

std::vector<char*> listArguments(const char* first, va_list& rest, char*** envp) {
  std::vector<char*> argv{const_cast<char*>(first)};
  while (argv.back())
    argv.push_back(va_arg(rest, char*));
  if (envp)
    *envp = va_arg(rest, char**);
  return argv;
}

} // namespace

using shapetrace::rt::prepareForExec;

SHAPETRACE_INTERPOSE int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  prepareForExec();
  return next<decltype(&::execve)>("execve")(path, argv, envp);
}

SHAPETRACE_INTERPOSE int execv(const char* path, char* const argv[]) noexcept {
  prepareForExec();
  return next<decltype(&::execv)>("execv")(path, argv);
}

SHAPETRACE_INTERPOSE int execvp(const char* file, char* const argv[]) noexcept {
  prepareForExec();
  return next<decltype(&::execvp)>("execvp")(file, argv);
}

SHAPETRACE_INTERPOSE int execvpe(const char* file, char* const argv[],
                                 char* const envp[]) noexcept {
  prepareForExec();
  return next<decltype(&::execvpe)>("execvpe")(file, argv, envp);
}

SHAPETRACE_INTERPOSE int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
  prepareForExec();
  return next<decltype(&::fexecve)>("fexecve")(fd, argv, envp);
}

SHAPETRACE_INTERPOSE int execl(const char* path, const char* arg, ...) noexcept {
  va_list rest;
  va_start(rest, arg);
  std::vector<char*> argv = listArguments(arg, rest, nullptr);
  va_end(rest);
  return execv(path, argv.data());
}

SHAPETRACE_INTERPOSE int execlp(const char* file, const char* arg, ...) noexcept {
  va_list rest;
  va_start(rest, arg);
  std::vector<char*> argv = listArguments(arg, rest, nullptr);
  va_end(rest);
  return execvp(file, argv.data());
}

SHAPETRACE_INTERPOSE int execle(const char* path, const char* arg, ...) noexcept {
  va_list rest;
  va_start(rest, arg);
  char** envp = nullptr;
  std::vector<char*> argv = listArguments(arg, rest, &envp);
  va_end(rest);
  return execve(path, argv.data(), envp);
}
