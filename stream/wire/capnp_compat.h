// Makes Debian 12's Cap'n Proto 0.9.2 headers compile as C++20 with clang.
//
// kj/string.h drops `operator==(const char*, const StringPtr&)` when the compiler has three-way
// comparison, expecting rewritten candidates to cover it, but capnp/blob.h still calls it in a way
// clang rejects (fixed upstream in 0.10). The build force-includes this header (-include) in every
// target that uses Cap'n Proto, so it comes before blob.h.
#pragma once

#include <capnp/common.h>
#include <kj/string.h>

#if __cpp_impl_three_way_comparison && CAPNP_VERSION < 10000
namespace kj {
inline bool operator==(const char* a, const StringPtr& b) { return b == StringPtr(a); }
} // namespace kj
#endif
