// The workload: a YCSB-style scrambled Zipfian key distribution and a deterministic stream of
// get / put / delete / scan requests drawn from it.
//
// ZipfGenerator follows Gray et al., "Quickly generating billion-record synthetic databases"
// (SIGMOD 1994), as YCSB's ZipfianGenerator does: O(n) set-up, O(1) per draw. Ranks are then
// scrambled by a hash so that the hot keys are spread over the key space (and over the B-tree's
// leaves) instead of being keys 0, 1, 2...
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>

#include "btree.h"

namespace kv {

class ZipfGenerator {
public:
  // Ranks 0..items-1; rank 0 is the most popular. theta in (0, 1); YCSB uses 0.99.
  ZipfGenerator(std::uint64_t items, double theta);
  std::uint64_t rank(std::mt19937_64& rng) const;
  std::uint64_t items() const { return items_; }

private:
  std::uint64_t items_;
  double zeta_n_;
  double alpha_;
  double eta_;
  double half_pow_theta_;
};

// A uniform double in [0, 1) from 53 random bits (the same on every standard library, unlike
// std::uniform_real_distribution).
double uniform01(std::mt19937_64& rng);

// Spreads ranks over the key space: a bijection on 64-bit integers (splitmix64's finaliser).
Key scrambleKey(std::uint64_t rank);

enum class Op : std::uint8_t { kGet, kPut, kDelete, kScan };
const char* opName(Op op);

struct Request {
  Op op = Op::kGet;
  Key key = 0;
  std::uint32_t value_size = 0;  // put
  std::uint32_t scan_length = 0; // scan
};

struct WorkloadMix {
  // Percentages; the rest are scans.
  unsigned get = 62;
  unsigned put = 28;
  unsigned erase = 3;
  std::uint32_t min_value = 16;
  std::uint32_t max_value = 256;
  std::uint32_t max_scan = 64;
  // Every burst_every requests, a batch import: burst_length puts of keys drawn uniformly (mostly
  // cold, so mostly new) with larger values. Bursts push the store past its memory budget faster
  // than the background evictor reclaims it, and past the unflushed-bytes bound.
  std::uint64_t burst_every = 100000;
  std::uint64_t burst_length = 2000;
  std::uint32_t burst_min_value = 512;
  std::uint32_t burst_max_value = 4096;
};

class RequestGenerator {
public:
  RequestGenerator(std::uint64_t keys, double theta, std::uint64_t seed, WorkloadMix mix = {});
  Request next();
  // A value of the given size whose bytes depend on the key and a version, so that a replaced
  // value differs from the one it replaces.
  static std::string makeValue(Key key, std::uint32_t size, std::uint64_t version);

private:
  Request nextBurstPut();

  ZipfGenerator zipf_;
  std::mt19937_64 rng_;
  WorkloadMix mix_;
  std::uint64_t drawn_ = 0;
};

} // namespace kv
