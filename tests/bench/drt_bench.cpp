// The DRT pipeline on the paper's micro-benchmarks (analyzer/explain/microbenchmarks.h), timed the
// way the paper's Tables 1 and 2 report it: T is the whole pipeline (clustering with Algorithm 1
// choosing K for K-linear, or K given for spectral; the tree; its 10-fold cross-validation), A the
// cross-validated accuracy, R^2 the lines' coefficient of determination, H the tree's height, L the
// number of lines. The paper's DPDEBUGGER took 261.2 s (K-linear) on R_6400.
//
//   drt_bench [--spectral] [NAME...]     (default: R_6400 with K-linear, then with spectral)
//
// Not a test: it makes no assertion. docs/BENCHMARKS.md has the figures and the command.
#include "explain/drt.h"
#include "explain/microbenchmarks.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace shapetrace::analyzer::drt;

namespace {

void run(const MicroBenchmark& bench, Method method) {
  const auto generated = generateMicroBenchmark(bench);
  const auto start = std::chrono::steady_clock::now();
  ClusterSearch search;
  search.method = method;
  LinearClusters clusters;
  if (method == Method::kKLinear) {
    const double bound = std::pow(0.1 * generated.points.times.mean(), 2);
    clusters = smallestK(generated.points, 6, bound, search).clusters;
  } else {
    clusters = clusterPoints(generated.points, bench.lines, search);
  }
  const auto clustered = std::chrono::steady_clock::now();
  const auto k = static_cast<uint32_t>(clusters.lines.size());
  const Explanation e = explainClusters(generated.features, clusters.labels, k, {});
  const auto end = std::chrono::steady_clock::now();
  const Eigen::VectorXd& y = generated.points.times;
  const double tss = (y.array() - y.mean()).square().sum();
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::printf("%-8s %-8s %5u %6u  T %8.3f s (clustering %.3f s, tree %.3f s)  A %5.1f%%  R^2 %.3f"
              "  H %u  L %u  (truth agreement %.1f%%)\n",
              bench.name.c_str(), methodName(method), bench.all_functions, bench.traces,
              seconds(start, end), seconds(start, clustered), seconds(clustered, end),
              100 * e.accuracy, 1 - clusters.rss / tss, e.tree.height, k,
              100 * agreementWithTruth(clusters.labels, generated.truth, std::max(k, bench.lines)));
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> names;
  bool spectral_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--spectral") == 0)
      spectral_only = true;
    else if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("drt_bench [--spectral] [NAME...]: the DRT pipeline on the paper's "
                  "micro-benchmarks (R_2 ... R_7, R_200 ... R_6400)\n");
      return 0;
    } else
      names.emplace_back(argv[i]);
  }
  if (names.empty())
    names = {"R_6400"};
  for (const std::string& name : names) {
    const MicroBenchmark* found = nullptr;
    for (const MicroBenchmark& b : paperMicroBenchmarks())
      if (b.name == name)
        found = &b;
    if (found == nullptr) {
      std::fprintf(stderr, "drt_bench: unknown benchmark '%s'\n", name.c_str());
      return 2;
    }
    if (!spectral_only)
      run(*found, Method::kKLinear);
    run(*found, Method::kSpectral);
  }
  return 0;
}
