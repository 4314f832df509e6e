// std::string_view arguments and return values chosen with `/s`
// (SHAPETRACE_PASS_ARGS='lookup@arg1/s,arg2,...'): the ABI passes a view as its length and its
// pointer (two registers on x86-64, one [2 x i64] on AArch64, in memory once x86-64's registers
// have run out), and the pass finds both from the debug information, whatever the position. The
// runtime reads exactly the view's bytes, never past them (the views below are cut out of longer
// strings; one ends where an unmapped page begins) and never faulting, at most SHAPETRACE_VALUE_TEXT_MAX of them; a NUL inside a view is
// part of its text, shown as \x00. `this` is arg1 of a member function; retval/s records a
// returned view.
// RUN: rm -rf %t && mkdir -p %t
// RUN: env SHAPETRACE_PASS_ARGS='lookup@arg1/s,arg2,arg3/s,late@arg6/s,arg7/s,arg8,Table::find@arg2/s,arg3,prefix@retval/s' %shapetrace_cxx -O2 -g %s -o %t/views
// The drain wakes once a second (the program ends before): see values-strings.cpp.
// RUN: env SHAPETRACE_OUTPUT=%t/rec SHAPETRACE_DRAIN_INTERVAL_US=1000000 %t/views > %t/out.txt
// RUN: %shapetrace dump %t/rec | grep -v '^#' | cut -d' ' -f3- >> %t/out.txt
// RUN: FileCheck %s --input-file %t/out.txt --match-full-lines --strict-whitespace
// The cap, 8 bytes: a longer view is cut and marked `...`.
// RUN: env SHAPETRACE_OUTPUT=%t/rec-8 SHAPETRACE_DRAIN_INTERVAL_US=1000000 SHAPETRACE_VALUE_TEXT_MAX=8 %t/views > /dev/null
// RUN: %shapetrace dump %t/rec-8 | grep -v '^#' | cut -d' ' -f3- | grep -e '-> lookup' -e '<- prefix' | FileCheck %s --check-prefix=CAP8 --match-full-lines --strict-whitespace
// SHAPETRACE_REDACT_ARGS: no byte of a view is read or sent (a view whose data() is null is still
// null); the secret is in the recording without it and nowhere in the one with it.
// RUN: env SHAPETRACE_OUTPUT=%t/rec-redacted SHAPETRACE_DRAIN_INTERVAL_US=1000000 SHAPETRACE_REDACT_ARGS=1 %t/views > /dev/null
// RUN: %shapetrace dump %t/rec-redacted | grep -v '^#' | cut -d' ' -f3- | grep -e '-> lookup' -e '<- prefix' | FileCheck %s --check-prefix=REDACTED --match-full-lines --strict-whitespace
// RUN: grep -rqa 'v13w-s3cr3t' %t/rec
// RUN: not grep -rqa 'v13w-s3cr3t' %t/rec-redacted
// Refused at compile time, naming the function and the value: a std::wstring_view (not 8-bit
// characters), a std::string by value, a reference to a std::string, a view without /s, and /s
// on a view without debug information (the pass cannot find it among the IR's arguments).
// RUN: env SHAPETRACE_PASS_ARGS='wideSize@arg1/s' not %shapetrace_cxx -O2 -g -c %s -o %t/x.o 2>&1 | FileCheck %s --check-prefix=WIDE
// WIDE: error: shapetrace: arg1 of 'wideSize(std::basic_string_view<wchar_t, std::char_traits<wchar_t>>)' is a std::basic_string_view<wchar_t, std::char_traits<wchar_t> > (characters of 32 bits): /s records 8-bit characters only (const char*, std::string_view)
// RUN: env SHAPETRACE_PASS_ARGS='ownedSize@arg1/s' not %shapetrace_cxx -O2 -g -c %s -o %t/x.o 2>&1 | FileCheck %s --check-prefix=STRING
// STRING: error: shapetrace: arg1 of 'ownedSize(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char>>)' is a std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > by value (the ABI passes a hidden reference to a copy): /s records a const char* or a std::string_view; choose a function that receives .c_str() or a std::string_view
// RUN: env SHAPETRACE_PASS_ARGS='refSize@arg1/s' not %shapetrace_cxx -O2 -g -c %s -o %t/x.o 2>&1 | FileCheck %s --check-prefix=REFERENCE
// REFERENCE: error: shapetrace: arg1 of 'refSize(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char>> const&)' is a reference to 'std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >', not to characters: /s records a const char* or a std::string_view; drop /s to record its address
// RUN: env SHAPETRACE_PASS_ARGS='lookup@arg1' not %shapetrace_cxx -O2 -g -c %s -o %t/x.o 2>&1 | FileCheck %s --check-prefix=NOTEXT
// NOTEXT: error: shapetrace: arg1 of 'lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)' is a std::basic_string_view<char, std::char_traits<char> > by value: record its characters with /s (arg1/s)
// RUN: env SHAPETRACE_PASS_ARGS='lookup@arg3/s' not %shapetrace_cxx -O2 -c %s -o %t/x.o 2>&1 | FileCheck %s --check-prefix=NODEBUG
// NODEBUG: error: shapetrace: 'lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)' takes a std::string_view, which the ABI may split over two arguments: without debug information (-g; line tables only do not describe parameters) the pass cannot tell which IR argument /s would read

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>

// Each keeps its views opaque to the optimiser and never reads them: some point nowhere.
__attribute__((noinline)) int lookup(std::string_view key, int flags, std::string_view where) {
  asm volatile("" : : "r"(key.data()), "r"(key.size()), "r"(where.data()), "r"(where.size()) : "memory");
  return flags + 1;
}
// Five integers first: x86-64 has one register left for `first` (passed in memory) and none for
// `second` (in memory too); AArch64 has registers for both.
__attribute__((noinline)) long late(long a, long b, long c, long d, long e, std::string_view first,
                                    std::string_view second, int n) {
  asm volatile("" : : "r"(first.data()), "r"(second.data()) : "memory");
  return a + b + c + d + e + long(first.size() + second.size()) + n;
}
struct Table {
  int base = 3;
  __attribute__((noinline)) int find(std::string_view name, int hint) const {
    asm volatile("" : : "r"(name.data()), "r"(name.size()) : "memory");
    return base + hint;
  }
};
__attribute__((noinline)) std::string_view prefix(std::string_view text, size_t n) {
  asm volatile("" : "+r"(n));
  return text.substr(0, n);
}
__attribute__((noinline)) size_t wideSize(std::wstring_view text) { return text.size(); }
__attribute__((noinline)) size_t ownedSize(std::string text) { return text.size(); }
__attribute__((noinline)) size_t refSize(const std::string& text) { return text.size(); }

int main() {
  const long page = sysconf(_SC_PAGESIZE);
  // Two pages, the second unmapped: `gone` points into it, `tail` runs into it.
  auto* pages = static_cast<char*>(
      mmap(nullptr, size_t(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  munmap(pages + page, size_t(page));
  const char* gone = pages + page + 16;
  char* tail = pages + page - 4;
  std::memcpy(tail, "tail", 4);
  std::printf("gone %p tail end %p\n", static_cast<const void*>(gone),
              static_cast<const void*>(pages + page));
  const std::string_view path = "/etc/passwd and more";
  const char with_nul[] = "key\0hidden\n\t\"x\"";
  int sum = lookup(path.substr(0, 11), 0, path.substr(5, 6));
  sum += lookup(std::string_view(with_nul, sizeof with_nul - 1), 1, "");
  sum += lookup(std::string_view(), 2, std::string_view(gone, 8));
  sum += lookup(std::string_view(tail, 10), 3, std::string_view(nullptr, 0));
  // Ends at the unmapped page: read whole (a const char* reader would read on, to a NUL).
  sum += lookup(std::string_view(tail, 4), 0, std::string_view(tail + 4, 0));
  sum += lookup("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef-cut", 4,
                "caf\xc3\xa9 \xff");
  sum += lookup("v13w-s3cr3t", 5, "x");
  sum += int(late(1, 2, 3, 4, 5, "sixth", path.substr(12), 9));
  const Table table;
  sum += table.find("alice", 7);
  sum += int(prefix("prefix-of-this", 6).size());
  sum += int(prefix("", 0).size());
  std::printf("sum %d\n", sum);
  (void)wideSize(L"w");
  (void)ownedSize("o");
  (void)refSize("r");
}

// CHECK:gone [[GONE:0x[0-9a-f]+]] tail end [[END:0x[0-9a-f]+]]
// CHECK-NEXT:sum 75
// CHECK-NEXT:-> main
// CHECK-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="/etc/passwd" arg2=0 arg3="passwd"
// CHECK-NEXT:  <- lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)
// CHECK-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="key\x00hidden\n\t\"x\"" arg2=1 arg3=""
// CHECK-NEXT:  <- lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)
// CHECK-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1=null arg2=2 arg3=<unreadable [[GONE]]>
// CHECK-NEXT:  <- lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)
// CHECK-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="tail"...<unreadable {{0x[0-9a-f]+}}> arg2=3 arg3=null
// CHECK-NEXT:  <- lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)
// CHECK-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="tail" arg2=0 arg3=""
// CHECK-NEXT:  <- lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)
// CHECK-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"... arg2=4 arg3="café \xff"
// CHECK-NEXT:  <- lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)
// CHECK-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="v13w-s3cr3t" arg2=5 arg3="x"
// CHECK-NEXT:  <- lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)
// CHECK-NEXT:  -> late(long, long, long, long, long, std::basic_string_view<char, std::char_traits<char>>, std::basic_string_view<char, std::char_traits<char>>, int) arg6="sixth" arg7="and more" arg8=9
// CHECK-NEXT:  <- late(long, long, long, long, long, std::basic_string_view<char, std::char_traits<char>>, std::basic_string_view<char, std::char_traits<char>>, int)
// CHECK-NEXT:  -> Table::find(std::basic_string_view<char, std::char_traits<char>>, int) const arg2="alice" arg3=7
// CHECK-NEXT:  <- Table::find(std::basic_string_view<char, std::char_traits<char>>, int) const
// CHECK-NEXT:  -> prefix(std::basic_string_view<char, std::char_traits<char>>, unsigned long)
// CHECK-NEXT:  <- prefix(std::basic_string_view<char, std::char_traits<char>>, unsigned long) = "prefix"
// CHECK-NEXT:  -> prefix(std::basic_string_view<char, std::char_traits<char>>, unsigned long)
// CHECK-NEXT:  <- prefix(std::basic_string_view<char, std::char_traits<char>>, unsigned long) = ""
// CHECK-NEXT:<- main
// CHECK-NOT:{{.}}

// CAP8:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="/etc/pas"... arg2=0 arg3="passwd"
// CAP8-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="key\x00hidd"... arg2=1 arg3=""
// CAP8-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1=null arg2=2 arg3=<unreadable {{0x[0-9a-f]+}}>
// CAP8-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="tail"...<unreadable {{0x[0-9a-f]+}}> arg2=3 arg3=null
// CAP8-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="tail" arg2=0 arg3=""
// CAP8-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="01234567"... arg2=4 arg3="café \xff"
// CAP8-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1="v13w-s3c"... arg2=5 arg3="x"
// CAP8-NEXT:  <- prefix(std::basic_string_view<char, std::char_traits<char>>, unsigned long) = "prefix"
// CAP8-NEXT:  <- prefix(std::basic_string_view<char, std::char_traits<char>>, unsigned long) = ""

// REDACTED:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1=<redacted> arg2=0 arg3=<redacted>
// REDACTED-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1=<redacted> arg2=1 arg3=<redacted>
// REDACTED-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1=null arg2=2 arg3=<redacted>
// REDACTED-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1=<redacted> arg2=3 arg3=null
// REDACTED-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1=<redacted> arg2=0 arg3=<redacted>
// REDACTED-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1=<redacted> arg2=4 arg3=<redacted>
// REDACTED-NEXT:  -> lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>) arg1=<redacted> arg2=5 arg3=<redacted>
// REDACTED-NEXT:  <- prefix(std::basic_string_view<char, std::char_traits<char>>, unsigned long) = <redacted>
// REDACTED-NEXT:  <- prefix(std::basic_string_view<char, std::char_traits<char>>, unsigned long) = <redacted>
