#include "synth/search/Prior.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

namespace brevis {

namespace {

// Additive smoothing: pseudo-counts given to the back-off distribution, and the number of
// productions uniform smoothing assumes.
constexpr double kContextSmoothing = 2;
constexpr double kDtypeSmoothing = 1;
constexpr double kProductionCount = 32;

std::string dtypePart(const std::string &context) { return context.substr(0, context.find('|')); }

unsigned bucket(double fraction, std::initializer_list<double> bounds) {
  unsigned b = 0;
  for (double bound : bounds) b += fraction >= bound;
  return b;
}

} // namespace

std::string priorContext(WordsView words, unsigned width, const DTypeInfo *floatType, bool top) {
  constexpr size_t kProbeWords = 256;
  std::vector<uint64_t> probe;
  const size_t step = std::max<size_t>(1, words.size() / kProbeWords);
  for (size_t i = 0; i < words.size() && probe.size() < kProbeWords; i += step) probe.push_back(words[i]);
  const auto zeros = static_cast<double>(std::count(probe.begin(), probe.end(), 0));
  std::sort(probe.begin(), probe.end());
  const auto distinct = static_cast<double>(std::unique(probe.begin(), probe.end()) - probe.begin());
  const double n = std::max<double>(1, static_cast<double>(std::min(words.size(), kProbeWords)));
  std::string kind = floatType ? std::string(floatType->bdslName)
                               : "u" + std::to_string(width <= 1 ? 1 : width <= 8 ? 8 : width <= 16 ? 16 : width <= 32 ? 32 : 64);
  return kind + (top ? "|top" : "|inner") + "|z" + std::to_string(bucket(zeros / n, {0.1, 0.5, 0.9})) + "|d" +
         std::to_string(bucket(distinct / n, {1.0 / 16, 0.25, 0.75}));
}

void ProductionPrior::count(const std::string &context, const std::string &production, uint64_t times) {
  contexts_[context][production] += times;
  dtypes_[dtypePart(context)][production] += times;
}

void ProductionPrior::add(const ProductionPrior &other) {
  for (const auto &[context, productions] : other.contexts_)
    for (const auto &[production, wins] : productions) count(context, production, wins);
}

uint64_t ProductionPrior::observations() const {
  uint64_t n = 0;
  for (const auto &[context, productions] : contexts_)
    for (const auto &[production, wins] : productions) n += wins;
  return n;
}

double ProductionPrior::probability(const std::string &context, const std::string &production) const {
  auto countsOf = [&](const auto &table, const std::string &key) -> std::pair<double, double> {
    auto row = table.find(key);
    if (row == table.end()) return {0, 0};
    double total = 0;
    for (const auto &[p, wins] : row->second) total += static_cast<double>(wins);
    auto it = row->second.find(production);
    return {it == row->second.end() ? 0 : static_cast<double>(it->second), total};
  };
  const auto [dtypeWins, dtypeTotal] = countsOf(dtypes_, dtypePart(context));
  const double backoff = (dtypeWins + kDtypeSmoothing / kProductionCount) / (dtypeTotal + kDtypeSmoothing);
  const auto [wins, total] = countsOf(contexts_, context);
  return (wins + kContextSmoothing * backoff) / (total + kContextSmoothing);
}

std::string ProductionPrior::toJson() const {
  nlohmann::ordered_json j;
  j["brevis_prior"] = 1;
  j["contexts"] = contexts_;
  return j.dump(1);
}

namespace {

bool isKnownContext(const std::string &context) {
  // dtype or width | top or inner | z0-3 | d0-3, as priorContext writes them.
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t bar = context.find('|', at);
    parts.push_back(context.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
    if (bar == std::string::npos) break;
    at = bar + 1;
  }
  auto bucket = [](const std::string &p, char letter) { return p.size() == 2 && p[0] == letter && p[1] >= '0' && p[1] <= '3'; };
  const bool known = parts.size() == 4 && !parts[0].empty() && (parts[1] == "top" || parts[1] == "inner");
  return known && bucket(parts[2], 'z') && bucket(parts[3], 'd');
}

bool isKnownProduction(const std::string &production) {
  static const char *const kPlain[] = {"const", "lit", "concat:runs", "concat:shift", "repeat", "scan:add", "scan:xor", "map:add"};
  for (const char *p : kPlain)
    if (production == p) return true;
  if (production.rfind("merge:", 0) != 0) return false;
  std::string kind = production.substr(6);
  if (kind.size() > 6 && kind.substr(kind.size() - 6) == "/const") kind.resize(kind.size() - 6);
  static const char *const kKinds[] = {"ieee",      "exp+1",     "exp+2",     "exp+3",  "signexp+0", "signexp+1",
                                       "signexp+2", "signexp+3", "halves",    "bytes",  "word"};
  for (const char *k : kKinds)
    if (kind == k) return true;
  return false;
}

} // namespace

Result<ProductionPrior> ProductionPrior::fromJson(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{"not a prior file (not JSON)"};
  if (!j.is_object()) return Error{"not a prior file (not a JSON object)"};
  if (!j.contains("brevis_prior") || j["brevis_prior"] != 1)
    return Error{"not a prior file of this version (\"brevis_prior\" must be 1)"};
  for (const auto &[key, value] : j.items())
    if (key != "brevis_prior" && key != "contexts") return Error{"a prior file has no \"" + key + "\""};
  if (!j.contains("contexts") || !j["contexts"].is_object()) return Error{"a prior file needs \"contexts\""};
  ProductionPrior prior;
  for (const auto &[context, productions] : j["contexts"].items()) {
    if (!isKnownContext(context)) return Error{"unknown prior context \"" + context + "\""};
    if (!productions.is_object()) return Error{"prior context \"" + context + "\" is not an object"};
    for (const auto &[production, wins] : productions.items()) {
      if (!isKnownProduction(production)) return Error{"unknown production \"" + production + "\" in a prior file"};
      if (!wins.is_number_unsigned()) return Error{"prior count of \"" + production + "\" is not a count"};
      prior.count(context, production, wins.get<uint64_t>());
    }
  }
  return prior;
}

} // namespace brevis
