// Prints "recorded=<n> lost=<n>" for a shapetrace recording: ProcessEnd's totals, cross-checked
// against the events and Gap items actually in the recording. Used by runtime_hooks_bench.py.
#include "recording/recording.h"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RECORDING_DIR\n", argv[0]);
    return 2;
  }
  try {
    shapetrace::recording::RecordingReader reader(argv[1]);
    uint64_t events = 0, gaps = 0, end_recorded = 0, end_lost = 0;
    bool ended = false;
    while (auto item = reader.nextItem()) {
      using namespace shapetrace::wire;
      if (auto* batch = std::get_if<EventBatch>(&item->body))
        events += batch->events.size();
      else if (auto* gap = std::get_if<Gap>(&item->body))
        gaps += gap->dropped;
      else if (auto* end = std::get_if<ProcessEnd>(&item->body))
        ended = true, end_recorded = end->events_recorded, end_lost = end->events_dropped;
    }
    if (!ended || end_recorded != events || end_lost < gaps) {
      std::fprintf(stderr, "recording_totals: inconsistent recording (%llu events, ProcessEnd %llu)\n",
                   (unsigned long long)events, (unsigned long long)end_recorded);
      return 1;
    }
    std::printf("recorded=%llu lost=%llu\n", (unsigned long long)events,
                (unsigned long long)end_lost);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "recording_totals: %s\n", error.what());
    return 1;
  }
  return 0;
}
