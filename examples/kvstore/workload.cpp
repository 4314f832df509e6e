// Zipfian key draws and request generation (see workload.h).
#include "workload.h"

#include <cmath>
#include <stdexcept>

namespace kv {
namespace {

double zeta(std::uint64_t n, double theta) {
  double sum = 0;
  for (std::uint64_t i = 1; i <= n; ++i)
    sum += 1.0 / std::pow(static_cast<double>(i), theta);
  return sum;
}

std::uint32_t uniformIn(std::mt19937_64& rng, std::uint32_t low, std::uint32_t high) {
  return low + static_cast<std::uint32_t>(rng() % (std::uint64_t{high} - low + 1));
}

} // namespace

ZipfGenerator::ZipfGenerator(std::uint64_t items, double theta) : items_(items) {
  if (items < 2)
    throw std::invalid_argument("a Zipfian distribution needs at least 2 items");
  if (!(theta > 0 && theta < 1))
    throw std::invalid_argument("the Zipfian exponent must be in (0, 1)");
  zeta_n_ = zeta(items, theta);
  double zeta_2 = zeta(2, theta);
  alpha_ = 1.0 / (1.0 - theta);
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(items), 1.0 - theta)) /
         (1.0 - zeta_2 / zeta_n_);
  half_pow_theta_ = 1.0 + std::pow(0.5, theta);
}

std::uint64_t ZipfGenerator::rank(std::mt19937_64& rng) const {
  double u = uniform01(rng);
  double uz = u * zeta_n_;
  if (uz < 1.0)
    return 0;
  if (uz < half_pow_theta_)
    return 1;
  auto drawn = static_cast<std::uint64_t>(static_cast<double>(items_) *
                                          std::pow(eta_ * u - eta_ + 1.0, alpha_));
  return drawn < items_ ? drawn : items_ - 1;
}

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

Key scrambleKey(std::uint64_t rank) {
  std::uint64_t z = rank + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

const char* opName(Op op) {
  switch (op) {
  case Op::kGet:
    return "get";
  case Op::kPut:
    return "put";
  case Op::kDelete:
    return "delete";
  case Op::kScan:
    return "scan";
  }
  return "?";
}

RequestGenerator::RequestGenerator(std::uint64_t keys, double theta, std::uint64_t seed,
                                   WorkloadMix mix)
    : zipf_(keys, theta), rng_(seed), mix_(mix) {}

Request RequestGenerator::next() {
  std::uint64_t position = drawn_++;
  if (mix_.burst_every != 0 && position % mix_.burst_every >= mix_.burst_every - mix_.burst_length)
    return nextBurstPut();
  Request request;
  auto dice = static_cast<unsigned>(rng_() % 100);
  request.key = scrambleKey(zipf_.rank(rng_));
  if (dice < mix_.get) {
    request.op = Op::kGet;
  } else if (dice < mix_.get + mix_.put) {
    request.op = Op::kPut;
    request.value_size = uniformIn(rng_, mix_.min_value, mix_.max_value);
  } else if (dice < mix_.get + mix_.put + mix_.erase) {
    request.op = Op::kDelete;
  } else {
    request.op = Op::kScan;
    request.scan_length = uniformIn(rng_, 1, mix_.max_scan);
  }
  return request;
}

Request RequestGenerator::nextBurstPut() {
  Request request;
  request.op = Op::kPut;
  request.key = scrambleKey(rng_() % zipf_.items());
  request.value_size = uniformIn(rng_, mix_.burst_min_value, mix_.burst_max_value);
  return request;
}

std::string RequestGenerator::makeValue(Key key, std::uint32_t size, std::uint64_t version) {
  std::string value(size, '\0');
  std::uint64_t state = scrambleKey(key ^ (version * 0x9E3779B97F4A7C15ull));
  for (std::uint32_t i = 0; i < size; ++i) {
    if (i % 8 == 0)
      state = scrambleKey(state);
    value[i] = static_cast<char>('a' + (state >> ((i % 8) * 8)) % 26);
  }
  return value;
}

} // namespace kv
