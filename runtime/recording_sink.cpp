// The SHAPETRACE_OUTPUT sink: the same stream items, written straight to a recording directory with
// the RecordingWriter (stream/recording), so the analyzer reads it like a recording
// made by the collector.
#include "sink.h"

#include "recording/recording.h"

#include <stdexcept>

namespace shapetrace::rt {
namespace {

class RecordingSink final : public Sink {
public:
  explicit RecordingSink(std::unique_ptr<recording::RecordingWriter> writer)
      : writer_(std::move(writer)) {}
  ~RecordingSink() override { close(0); }

  bool send(std::span<const std::byte> message) override {
    // The writer copies into its buffer; file I/O happens on its own thread. It refuses (false)
    // only after a write error such as a full disk, which then counts as loss like a full queue.
    return writer_ && writer_->append(message);
  }
  bool mayAccept() const override { return writer_ && !writer_->failed(); }
  void close(unsigned) override {
    if (writer_)
      writer_->close();
    writer_.reset();
  }
  void release(unsigned) override {
    if (writer_)
      writer_->flush();
  }
  // The writer's thread does not exist in a forked child: never touch the object there.
  void abandon() override { (void)writer_.release(); }
  std::string describe() const override {
    return writer_ ? "recording " + writer_->directory() : "closed recording";
  }

private:
  std::unique_ptr<recording::RecordingWriter> writer_;
};

} // namespace

std::unique_ptr<Sink> makeRecordingSink(const std::string& directory, std::string& error) {
  try {
    return std::make_unique<RecordingSink>(std::make_unique<recording::RecordingWriter>(directory));
  } catch (const std::exception& failure) {
    error = "cannot write SHAPETRACE_OUTPUT '" + directory + "': " + failure.what();
    return nullptr;
  }
}

} // namespace shapetrace::rt
