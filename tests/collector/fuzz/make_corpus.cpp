// Writes the seed corpus of decoder_fuzzer: one valid message of every item kind, and a framed
// recording of them, so the fuzzer starts from the structures it has to break.
#include "wire/codec.h"
#include "wire/framing.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace shapetrace;
using namespace shapetrace::wire;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus DIR\n");
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  ProcessStart start;
  start.pid = 42;
  start.executable = "/bin/app";
  start.arguments = {"app", "--x"};
  start.config = {{"SHAPETRACE_RING", "65536"}};
  std::vector<StreamItem> items = {
      {1, start},
      {1, ModuleTable{"app", 0, {{0, "_Z1fv", "f()", "f.cpp", 3}, {1, "main", "main", "m.c", 9}}}},
      {1, ThreadStart{7, 100, "main"}},
      {1, ThreadName{7, 110, "worker"}},
      {1, EventBatch{7, 0, {{120, 0, EventKind::Enter}, {130, 1, EventKind::Enter},
                            {150, 1, EventKind::UnwindExit}, {160, 1, EventKind::Enter},
                            {170, 1, EventKind::AbandonedExit}, {190, 0, EventKind::Exit}}}},
      {1, Gap{7, 12, 0, 200, 260}},
      {1, Annotation{7, 300, "input_size", 4096}},
      {1, ThreadEnd{7, 400, 6, 12, 1}},
      {1, ProcessEnd{480, 6, 12, 0, wire::EndReason::Exec, "/bin/other"}},
      {1, ExecFailed{490, "/bin/other", 2}},
      {1, ProcessEnd{500, 6, 12, 0, wire::EndReason::Exit, ""}},
      {1, ExitStatus{42, 510, 0, 0, false}},
  };
  std::vector<std::byte> framed;
  for (size_t i = 0; i < items.size(); ++i) {
    const Bytes message = encodeItem(items[i]);
    std::ofstream(std::string(argv[1]) + "/item" + std::to_string(i), std::ios::binary)
        .write(reinterpret_cast<const char*>(message.data()), static_cast<long>(message.size()));
    appendFrame(framed, message);
  }
  std::ofstream(std::string(argv[1]) + "/frames", std::ios::binary)
      .write(reinterpret_cast<const char*>(framed.data()), static_cast<long>(framed.size()));
  return 0;
}
