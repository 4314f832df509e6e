// Arguments and return values chosen at compile time (SHAPETRACE_PASS_ARGS), recorded and shown by
// `shapetrace dump` on the enter line (`arg1=-3 arg2=2.5`) and the exit line (`= -7`): a negative
// int, a double, a float, an unsigned char (zero-extended), `this` as arg1 of a method, pointers (the
// address the program prints), a bool return, and a function left by an exception, which records
// its argument but no return value. Functions not chosen (helper) record only their calls.
// RUN: rm -rf %t && mkdir -p %t
// RUN: env SHAPETRACE_PASS_ARGS='scale@arg1,arg2,retval,Counter::add@arg1,arg2,arg3,retval,lookup@arg1,arg2,retval,mayThrow@arg1,retval,isEven@retval' %shapetrace_cxx -O2 -g %s -o %t/values
// RUN: env SHAPETRACE_OUTPUT=%t/rec %t/values > %t/out.txt
// RUN: %shapetrace dump %t/rec | grep -v '^#' | cut -d' ' -f3- >> %t/out.txt
// RUN: FileCheck %s --input-file %t/out.txt --match-full-lines --strict-whitespace
// The same with the gate (one body).
// RUN: env SHAPETRACE_PASS_DETACHED=gate SHAPETRACE_PASS_ARGS='scale@arg1,arg2,retval,Counter::add@arg1,arg2,arg3,retval,lookup@arg1,arg2,retval,mayThrow@arg1,retval,isEven@retval' %shapetrace_cxx -O2 -g %s -o %t/gated
// RUN: env SHAPETRACE_OUTPUT=%t/rec-gated %t/gated > %t/out-gated.txt
// RUN: %shapetrace dump %t/rec-gated | grep -v '^#' | cut -d' ' -f3- >> %t/out-gated.txt
// RUN: FileCheck %s --input-file %t/out-gated.txt --match-full-lines --strict-whitespace
// Batches of one event (and one mark): every value comes in a batch of its own, without events,
// and is shown on a line of its own; the same values.
// RUN: env SHAPETRACE_OUTPUT=%t/rec-one SHAPETRACE_BATCH=1 %t/values > /dev/null
// RUN: %shapetrace dump %t/rec-one | grep -v '^#' | cut -d' ' -f3- | FileCheck %s --check-prefix=ONE --match-full-lines --strict-whitespace
// The Chrome trace format: a call's arguments are its B event's args, its return value its E
// event's (integers and doubles as numbers, pointers as strings); values a batch's end cut from
// their event are instant events of their own. Times, pid and tid replaced by T.
// RUN: %shapetrace dump --format chrome %t/rec | grep -E '"ph":"[BEi]"' | sed -E 's/"pid":[0-9]+,"tid":[0-9]+,"ts":[0-9]+\.[0-9]{3}/T/; s/,$//' | FileCheck %s --check-prefix=CHROME --match-full-lines --strict-whitespace
// RUN: %shapetrace dump --format chrome %t/rec-one | grep -E '"ph":"[BEi]"' | sed -E 's/"pid":[0-9]+,"tid":[0-9]+,"ts":[0-9]+\.[0-9]{3}/T/; s/,$//' | FileCheck %s --check-prefix=CHROME-ONE --match-full-lines --strict-whitespace
// Nothing chosen: the same calls, no values.
// RUN: %shapetrace_cxx -O2 -g %s -o %t/plain
// RUN: env SHAPETRACE_OUTPUT=%t/rec-plain %t/plain > /dev/null
// RUN: %shapetrace dump %t/rec-plain | grep -v '^#' | cut -d' ' -f3- | FileCheck %s --check-prefix=PLAIN --match-full-lines --strict-whitespace

// Structs by value, compiled by clang through the wrapper: one passed in memory is refused; one
// x86-64 packs into a register is refused where debug information says what it is (with -g), as is
// a struct returned in registers.
// RUN: env SHAPETRACE_PASS_ARGS='sumBig@arg1' not %shapetrace_cxx -O2 -c %S/Inputs/values_structs.cpp -o %t/s.o 2>&1 | FileCheck %s --check-prefix=BYVAL
// BYVAL: error: shapetrace: arg1 of 'sumBig(Big)' is passed in memory (a struct or class by value): only integers up to 64 bits, pointers, float and double can be recorded
// RUN: env SHAPETRACE_PASS_ARGS='firstOfPair@arg1' not %shapetrace_cxx -O2 -g -c %S/Inputs/values_structs.cpp -o %t/s.o 2>&1 | FileCheck %s --check-prefix=PACKED
// PACKED: error: shapetrace: arg1 of 'firstOfPair(Pair)' is a struct, class or union by value (the ABI passes it in registers or as a hidden reference): only integers up to 64 bits, pointers, float and double can be recorded
// RUN: env SHAPETRACE_PASS_ARGS='makePair@retval' not %shapetrace_cxx -O2 -g -c %S/Inputs/values_structs.cpp -o %t/s.o 2>&1 | FileCheck %s --check-prefix=RETURNED
// RETURNED: error: shapetrace: the return value of 'makePair(int)' is a struct, class or union by value

// CHECK:counter at [[COUNTER:0x[0-9a-f]+]], table at [[TABLE:0x[0-9a-f]+]], entry at [[ENTRY:0x[0-9a-f]+]]
// CHECK-NEXT:total 62
// CHECK-NEXT:-> main
// CHECK-NEXT:  -> scale(int, double) arg1=-3 arg2=2.5
// CHECK-NEXT:  <- scale(int, double) = -7
// CHECK-NEXT:  -> Counter::add(unsigned char, float) arg1=[[COUNTER]] arg2=200 arg3=0.25
// CHECK-NEXT:    -> helper(long)
// CHECK-NEXT:    <- helper(long)
// CHECK-NEXT:  <- Counter::add(unsigned char, float) = 55
// CHECK-NEXT:  -> lookup(int const*, unsigned long) arg1=[[TABLE]] arg2=3
// CHECK-NEXT:  <- lookup(int const*, unsigned long) = [[ENTRY]]
// CHECK-NEXT:  -> isEven(unsigned int)
// CHECK-NEXT:  <- isEven(unsigned int) = 1
// CHECK-NEXT:  -> isEven(unsigned int)
// CHECK-NEXT:  <- isEven(unsigned int) = 0
// CHECK-NEXT:  -> mayThrow(int) arg1=5
// CHECK-NEXT:  <- mayThrow(int) = 10
// CHECK-NEXT:  -> mayThrow(int) arg1=-1
// CHECK-NEXT:  <~ mayThrow(int)
// CHECK-NEXT:<- main
// CHECK-NOT:{{.}}

// ONE:-> main
// ONE-NEXT:  -> scale(int, double)
// ONE-NEXT:    # scale(int, double) arg1=-3
// ONE-NEXT:    # scale(int, double) arg2=2.5
// ONE-NEXT:    # scale(int, double) = -7
// ONE-NEXT:  <- scale(int, double)
// ONE-NEXT:  -> Counter::add(unsigned char, float)
// ONE-NEXT:    # Counter::add(unsigned char, float) arg1={{0x[0-9a-f]+}}
// ONE-NEXT:    # Counter::add(unsigned char, float) arg2=200
// ONE-NEXT:    # Counter::add(unsigned char, float) arg3=0.25
// ONE-NEXT:    -> helper(long)
// ONE-NEXT:    <- helper(long)
// ONE-NEXT:    # Counter::add(unsigned char, float) = 55
// ONE-NEXT:  <- Counter::add(unsigned char, float)

// CHROME:{"ph":"B",T,"name":"main"}
// CHROME-NEXT:{"ph":"B",T,"name":"scale(int, double)","args":{"arg1":-3,"arg2":2.5}}
// CHROME-NEXT:{"ph":"E",T,"args":{"retval":-7}}
// CHROME-NEXT:{"ph":"B",T,"name":"Counter::add(unsigned char, float)","args":{"arg1":"{{0x[0-9a-f]+}}","arg2":200,"arg3":0.25}}
// CHROME-NEXT:{"ph":"B",T,"name":"helper(long)"}
// CHROME-NEXT:{"ph":"E",T}
// CHROME-NEXT:{"ph":"E",T,"args":{"retval":55}}
// CHROME-NEXT:{"ph":"B",T,"name":"lookup(int const*, unsigned long)","args":{"arg1":"{{0x[0-9a-f]+}}","arg2":3}}
// CHROME-NEXT:{"ph":"E",T,"args":{"retval":"{{0x[0-9a-f]+}}"}}
// CHROME-NEXT:{"ph":"B",T,"name":"isEven(unsigned int)"}
// CHROME-NEXT:{"ph":"E",T,"args":{"retval":1}}
// CHROME-NEXT:{"ph":"B",T,"name":"isEven(unsigned int)"}
// CHROME-NEXT:{"ph":"E",T,"args":{"retval":0}}
// CHROME-NEXT:{"ph":"B",T,"name":"mayThrow(int)","args":{"arg1":5}}
// CHROME-NEXT:{"ph":"E",T,"args":{"retval":10}}
// CHROME-NEXT:{"ph":"B",T,"name":"mayThrow(int)","args":{"arg1":-1}}
// CHROME-NEXT:{"ph":"E",T}
// CHROME-NEXT:{"ph":"E",T}
// CHROME-NOT:{{.}}

// CHROME-ONE:{"ph":"B",T,"name":"main"}
// CHROME-ONE-NEXT:{"ph":"B",T,"name":"scale(int, double)"}
// CHROME-ONE-NEXT:{"ph":"i","s":"t",T,"name":"shapetrace: values of scale(int, double)","cat":"shapetrace","args":{"arg1":-3}}
// CHROME-ONE-NEXT:{"ph":"i","s":"t",T,"name":"shapetrace: values of scale(int, double)","cat":"shapetrace","args":{"arg2":2.5}}
// CHROME-ONE-NEXT:{"ph":"i","s":"t",T,"name":"shapetrace: values of scale(int, double)","cat":"shapetrace","args":{"retval":-7}}
// CHROME-ONE-NEXT:{"ph":"E",T}

// PLAIN:-> main
// PLAIN-NEXT:  -> scale(int, double)
// PLAIN-NEXT:  <- scale(int, double)
// PLAIN-NEXT:  -> Counter::add(unsigned char, float)

#include <cstdio>
#include <stdexcept>

// Each function touches memory the compiler cannot see through, so that -O2 keeps the calls in
// the source's order.
#define OPAQUE() __asm__ volatile("" ::: "memory")

__attribute__((noinline)) long scale(int n, double factor) {
  OPAQUE();
  return long(n * factor);
}

__attribute__((noinline)) long helper(long x) { return x + 5; }

struct Counter {
  long total = 0;
  __attribute__((noinline)) long add(unsigned char step, float weight) {
    total += helper(long(step * weight));
    return total;
  }
};

__attribute__((noinline)) const int* lookup(const int* table, unsigned long index) {
  OPAQUE();
  return table + index;
}

__attribute__((noinline)) bool isEven(unsigned v) {
  OPAQUE();
  return v % 2 == 0;
}

__attribute__((noinline)) int mayThrow(int x) {
  OPAQUE();
  if (x < 0)
    throw std::invalid_argument("negative");
  return 2 * x;
}

int main() {
  static Counter counter;
  static const int table[5] = {1, 2, 3, 4, 5};
  std::printf("counter at %p, table at %p, entry at %p\n", static_cast<void*>(&counter),
              static_cast<const void*>(table), static_cast<const void*>(table + 3));
  // Arguments the optimiser cannot specialise the functions on.
  const int* volatile opaque_table = table;
  volatile unsigned long opaque_index = 3;
  long total = scale(-3, 2.5);
  total += counter.add(200, 0.25f);
  total += *lookup(opaque_table, opaque_index);
  total += isEven(4) + isEven(7);
  total += mayThrow(5);
  try {
    total += mayThrow(-1);
  } catch (const std::invalid_argument&) {
    total -= 1;
  }
  std::printf("total %ld\n", total);
  return 0;
}
