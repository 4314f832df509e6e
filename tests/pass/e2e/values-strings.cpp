// String arguments chosen with `/s` (SHAPETRACE_PASS_ARGS='openFile@arg1/s,arg2'): the runtime reads
// the text at the pointer without ever faulting, at most SHAPETRACE_VALUE_TEXT_MAX bytes (64 by
// default), and `shapetrace dump` shows it quoted, escaped where it is not UTF-8: a normal string,
// null, a pointer into an unmapped page (recorded as unreadable, the program goes on), a string
// running into an unmapped page (its readable part, then unreadable), one longer than the cap (cut
// and marked `...`), one with a quote, a newline, UTF-8 and a byte that is not, and a string
// returned (`retval/s`).
// RUN: rm -rf %t && mkdir -p %t
// RUN: env SHAPETRACE_PASS_ARGS='openFile@arg1/s,arg2,greeting@retval/s' %shapetrace_cxx -O2 -g %s -o %t/strings
// The drain wakes once a second (the program ends before): a value read with a system call after
// its enter is not left for a batch of its own by a drain that ran in between (shown the same, on
// a line of its own: tests/pass/e2e/values.cpp, ONE).
// RUN: env SHAPETRACE_OUTPUT=%t/rec SHAPETRACE_DRAIN_INTERVAL_US=1000000 %t/strings > %t/out.txt
// RUN: %shapetrace dump %t/rec | grep -v '^#' | cut -d' ' -f3- >> %t/out.txt
// RUN: FileCheck %s --input-file %t/out.txt --match-full-lines --strict-whitespace
// summarize --with-values: a string is part of the call's symbol as dump shows it.
// RUN: %shapetrace summarize %t/rec --with-values 'openFile@arg1' | FileCheck %s --check-prefix=SUMMARIZE
// SUMMARIZE: 0 -> +main,1,+openFile@arg1=null,-openFile@arg1=null,+openFile@arg1=<unreadable {{0x[0-9a-f]+}}>,{{.*}},+openFile@arg1="say \"café\"\n\xff",-openFile@arg1="say \"café\"\n\xff",1,{{.*}}
// SUMMARIZE: 1 -> +openFile@arg1="/etc/passwd",-openFile@arg1="/etc/passwd"
// The cap, configurable: 8 bytes.
// RUN: env SHAPETRACE_OUTPUT=%t/rec-8 SHAPETRACE_DRAIN_INTERVAL_US=1000000 SHAPETRACE_VALUE_TEXT_MAX=8 %t/strings > /dev/null
// RUN: %shapetrace dump %t/rec-8 | grep -v '^#' | cut -d' ' -f3- | grep 'openFile.*arg2=1$' | FileCheck %s --check-prefix=CAP8 --match-full-lines --strict-whitespace
// CAP8:  -> openFile(char const*, int) arg1="/etc/pas"... arg2=1
// Beyond the hard maximum (1024): refused, the default kept.
// RUN: env SHAPETRACE_OUTPUT=%t/rec-big SHAPETRACE_VALUE_TEXT_MAX=4096 %t/strings 2>&1 >/dev/null | FileCheck %s --check-prefix=TOOBIG
// TOOBIG: shapetrace: ignoring SHAPETRACE_VALUE_TEXT_MAX: expected a count from 1 to 1024; using the default
// SHAPETRACE_REDACT_ARGS: no text is read or sent (a null pointer is still null); the secret is in
// the recording without it and nowhere in the one with it.
// RUN: env SHAPETRACE_OUTPUT=%t/rec-redacted SHAPETRACE_DRAIN_INTERVAL_US=1000000 SHAPETRACE_REDACT_ARGS=1 %t/strings > /dev/null
// RUN: %shapetrace dump %t/rec-redacted | grep -v '^#' | cut -d' ' -f3- | grep -e '-> openFile' -e '<- greeting' | FileCheck %s --check-prefix=REDACTED --match-full-lines --strict-whitespace
// RUN: grep -rqa 's3cr3t' %t/rec
// RUN: not grep -rqa 's3cr3t' %t/rec-redacted
// Not a pointer to characters: refused at compile time (std::string_view: values-string-views.cpp).
// RUN: env SHAPETRACE_PASS_ARGS='sizeOf@arg1/s' not %shapetrace_cxx -O2 -g -c %s -o %t/x.o 2>&1 | FileCheck %s --check-prefix=NOTCHARS
// NOTCHARS: error: shapetrace: arg1 of 'sizeOf(int const*)' is a pointer to 'int', not to characters: /s records a const char* or a std::string_view; drop /s to record its address
// RUN: env SHAPETRACE_PASS_ARGS='openFile@arg2/s' not %shapetrace_cxx -O2 -g -c %s -o %t/x.o 2>&1 | FileCheck %s --check-prefix=INT
// INT: error: shapetrace: arg2 of 'openFile(char const*, int)' has IR type i32: /s records a const char* or (with debug information, -g) a std::string_view, and this is neither
// RUN: env SHAPETRACE_PASS_ARGS='openFile@arg1/x' not %shapetrace_cxx -O2 -g -c %s -o %t/x.o 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: error: shapetrace: -shapetrace-args: 'arg1/x': '/x' is not a format this pass knows (only /s, a const char* or std::string_view recorded as its text)

#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

// Never reads `path`: some of them point nowhere.
__attribute__((noinline)) int openFile(const char* path, int flags) {
  asm volatile("" : : "r"(path) : "memory");
  return flags + 1;
}
__attribute__((noinline)) const char* greeting(int n) {
  asm volatile("" : : "r"(n));
  return n ? "hello" : nullptr;
}
__attribute__((noinline)) long sizeOf(const int* p) { return p ? 4 : 0; }

int main() {
  const long page = sysconf(_SC_PAGESIZE);
  // Two pages, the second unmapped: `gone` points into it, `tail` runs into it without a NUL.
  auto* pages = static_cast<char*>(
      mmap(nullptr, size_t(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  munmap(pages + page, size_t(page));
  const char* gone = pages + page + 16;
  char* tail = pages + page - 4;
  std::memcpy(tail, "tail", 4);
  std::printf("gone %p tail end %p\n", static_cast<const void*>(gone),
              static_cast<const void*>(pages + page));
  const char* long_text = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef-cut-here";
  int sum = openFile("/etc/passwd", 0);
  sum += openFile(nullptr, 0);
  sum += openFile(gone, 0);
  sum += openFile(tail, 0);
  sum += openFile(long_text, 0);
  sum += openFile("say \"caf\xc3\xa9\"\n\xff", 0);
  sum += openFile("/etc/passwd", 1);
  sum += openFile("s3cr3t", 2);
  sum += greeting(1) != nullptr;
  sum += greeting(0) != nullptr;
  std::printf("sum %d\n", sum);
}

// CHECK:gone [[GONE:0x[0-9a-f]+]] tail end [[END:0x[0-9a-f]+]]
// CHECK-NEXT:sum 12
// CHECK-NEXT:-> main
// CHECK-NEXT:  -> openFile(char const*, int) arg1="/etc/passwd" arg2=0
// CHECK-NEXT:  <- openFile(char const*, int)
// CHECK-NEXT:  -> openFile(char const*, int) arg1=null arg2=0
// CHECK-NEXT:  <- openFile(char const*, int)
// CHECK-NEXT:  -> openFile(char const*, int) arg1=<unreadable [[GONE]]> arg2=0
// CHECK-NEXT:  <- openFile(char const*, int)
// CHECK-NEXT:  -> openFile(char const*, int) arg1="tail"...<unreadable {{0x[0-9a-f]+}}> arg2=0
// CHECK-NEXT:  <- openFile(char const*, int)
// CHECK-NEXT:  -> openFile(char const*, int) arg1="0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"... arg2=0
// CHECK-NEXT:  <- openFile(char const*, int)
// CHECK-NEXT:  -> openFile(char const*, int) arg1="say \"café\"\n\xff" arg2=0
// CHECK-NEXT:  <- openFile(char const*, int)
// CHECK-NEXT:  -> openFile(char const*, int) arg1="/etc/passwd" arg2=1
// CHECK-NEXT:  <- openFile(char const*, int)
// CHECK-NEXT:  -> openFile(char const*, int) arg1="s3cr3t" arg2=2
// CHECK-NEXT:  <- openFile(char const*, int)
// CHECK-NEXT:  -> greeting(int)
// CHECK-NEXT:  <- greeting(int) = "hello"
// CHECK-NEXT:  -> greeting(int)
// CHECK-NEXT:  <- greeting(int) = null
// CHECK-NEXT:<- main
// CHECK-NOT:{{.}}

// REDACTED:  -> openFile(char const*, int) arg1=<redacted> arg2=0
// REDACTED-NEXT:  -> openFile(char const*, int) arg1=null arg2=0
// REDACTED-NEXT:  -> openFile(char const*, int) arg1=<redacted> arg2=0
// REDACTED-NEXT:  -> openFile(char const*, int) arg1=<redacted> arg2=0
// REDACTED-NEXT:  -> openFile(char const*, int) arg1=<redacted> arg2=0
// REDACTED-NEXT:  -> openFile(char const*, int) arg1=<redacted> arg2=0
// REDACTED-NEXT:  -> openFile(char const*, int) arg1=<redacted> arg2=1
// REDACTED-NEXT:  -> openFile(char const*, int) arg1=<redacted> arg2=2
// REDACTED-NEXT:  <- greeting(int) = <redacted>
// REDACTED-NEXT:  <- greeting(int) = null
