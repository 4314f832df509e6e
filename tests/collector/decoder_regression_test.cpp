// Inputs the decoder fuzzer (fuzz/decoder_fuzzer.cpp) found, kept as regression tests: each must
// be rejected with a FormatError, without allocating for what it claims to hold.
#include "wire/codec.h"
#include "wire/format_error.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace shapetrace::wire {
namespace {

std::vector<std::byte> fromBase64(const std::string& text) {
  const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<std::byte> out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=')
      break;
    bits = (bits << 6) | static_cast<uint32_t>(alphabet.find(c));
    if ((count += 6) >= 8) {
      count -= 8;
      out.push_back(static_cast<std::byte>((bits >> count) & 0xff));
    }
  }
  return out;
}

// An event batch declaring 267 million events in a few bytes: the decoder reserved memory for
// the declared count before checking it (out of memory).
TEST(DecoderRegression, BatchWithAHugeDeclaredCountIsRejectedBeforeAllocating) {
  const auto message = fromBase64("AAAAAAsAAAAAAAAAAgABAAEABQAAAAAAAQAAAAAAAAAAAAAABAABAAcAAAAD///+"
                                  "U1RSRgAAAAB4AAAAAAAAAAAAAAAAAAAAAQAAAFIAAAAAAFABogEBwQIAAAAAAAAA");
  ASSERT_EQ(message.size() % 8, 0u);
  EXPECT_THROW(decodeItem(message), FormatError);
  EXPECT_THROW(peekItem(message), FormatError);
}

// A 200-byte module table whose function list has millions of zero-sized elements: it decoded
// into millions of FunctionInfo values. The traversal limit is now proportional to the size.
TEST(DecoderRegression, ZeroSizedListElementsCannotAmplifyASmallMessage) {
  const auto message = fromBase64(
      "AAAAABcAAAAAAAAAAgABAAEAAQAAAAAAAQAAAAAAAMAAAAAAAQACAAAAAAAAAAAABQAAACIAAACFAAAIAAAAAQAD"
      "AAAAAAADAAAAAAEAAwAAAAAAAwAAABkAAAAyAAAAGQAAAN8AAAAZKQAAMgAAAAEAAAAJAAAAFQAAACoAAAAVAAAA"
      "KgAAABUAAAAiAAAAX1oxZnYAAABmKCkAAAAAAGYuY3BwAAAAemFpbgAAAABtYWluAAAAAG0uYwAAAAAA");
  ASSERT_EQ(message.size() % 8, 0u);
  EXPECT_THROW(decodeItem(message), FormatError);
}

} // namespace
} // namespace shapetrace::wire
