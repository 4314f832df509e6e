// Writes the service trace fixture (service_trace.h) as a recording directory, for the browser
// tests and for looking at the report by hand:
//
//   report_service_recording DIR [--requests N] [--workers N] [--gap] [--split-share X] [--killed] [--sizes]
//                            [--recursion] [--values] [--process KEY]
#include "service_trace.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s DIR [--requests N] [--workers N] [--gap] [--split-share X] [--killed] "
                 "[--sizes] [--recursion] [--values] [--process KEY]\n",
                 argv[0]);
    return 2;
  }
  shapetrace::report_testing::ServiceTraceOptions options;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--requests") == 0 && i + 1 < argc)
      options.requests_per_worker = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--workers") == 0 && i + 1 < argc)
      options.workers = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--split-share") == 0 && i + 1 < argc)
      options.split_share = std::atof(argv[++i]);
    else if (std::strcmp(argv[i], "--gap") == 0)
      options.gap_on_last_worker = true;
    else if (std::strcmp(argv[i], "--killed") == 0)
      options.killed = true;
    else if (std::strcmp(argv[i], "--recursion") == 0)
      options.recursion = true;
    else if (std::strcmp(argv[i], "--sizes") == 0)
      options.request_sizes = true;
    else if (std::strcmp(argv[i], "--process") == 0 && i + 1 < argc)
      options.process = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--values") == 0)
      options.call_values = true;
    else {
      std::fprintf(stderr, "%s: unknown argument %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  try {
    shapetrace::report_testing::ServiceTrace(options).write(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
