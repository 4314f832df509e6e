// `explain --csv FILE`: a table of runs in the layout of the DRT paper's data (explain.h).
#include "explain.h"

#include <filesystem>
#include <istream>
#include <string>
#include <vector>

namespace shapetrace::analyzer {

namespace {

// Splits a CSV line at its commas (the table's cells are names and numbers: no quoting).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t comma; (comma = line.find(',', from)) != std::string::npos; from = comma + 1)
    out.push_back(line.substr(from, comma - from));
  out.push_back(line.substr(from));
  return out;
}

double number(const std::string& cell, const std::string& where) {
  try {
    size_t used = 0;
    const double v = std::stod(cell, &used);
    if (used == cell.size())
      return v;
  } catch (const std::exception&) {
  }
  throw ExplainError(where + ": '" + cell + "' is not a number");
}

} // namespace

ExplainData readRunsTable(std::istream& in, const std::string& path) {
  std::string line;
  size_t number_of_line = 0;
  auto next = [&]() {
    while (std::getline(in, line)) {
      ++number_of_line;
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (!line.empty())
        return true;
    }
    return false;
  };
  if (!next())
    throw ExplainError(path + " is empty");
  const std::vector<std::string> header = cells(line);
  if (header.size() < 3)
    throw ExplainError(path + ":1: expected a header id,input,time,f1,...,fm");
  ExplainData data;
  data.unit = "run";
  data.subject = "runs of " + std::filesystem::path(path).filename().string();
  data.input_name = header[1];
  std::vector<std::string> ids;
  std::vector<double> inputs, times;
  std::vector<std::vector<std::pair<uint32_t, double>>> calls(header.size() - 3);
  while (next()) {
    const std::string where = path + ":" + std::to_string(number_of_line);
    const std::vector<std::string> row = cells(line);
    if (row.size() != header.size())
      throw ExplainError(where + ": " + std::to_string(row.size()) + " cells, the header has " +
                         std::to_string(header.size()));
    const auto point = static_cast<uint32_t>(ids.size());
    ids.push_back(row[0]);
    inputs.push_back(number(row[1], where));
    times.push_back(number(row[2], where));
    for (size_t f = 3; f < row.size(); ++f)
      if (const double v = number(row[f], where); v != 0)
        calls[f - 3].emplace_back(point, v);
  }
  const auto n = static_cast<Eigen::Index>(ids.size());
  data.points.inputs.resize(n, 1);
  data.points.times.resize(n);
  for (Eigen::Index p = 0; p < n; ++p) {
    data.points.inputs(p, 0) = inputs[p];
    data.points.times(p) = times[p];
    data.point_refs.push_back({{"id", ids[p]}});
  }
  data.features.points = ids.size();
  for (size_t f = 0; f < calls.size(); ++f) {
    const uint32_t feature = data.features.add("calls of " + header[f + 3]);
    for (const auto& [point, value] : calls[f])
      data.features.set(feature, point, value);
    data.feature_refs.push_back({{"kind", "function"}, {"name", header[f + 3]}});
  }
  data.seen = ids.size();
  return data;
}

} // namespace shapetrace::analyzer
