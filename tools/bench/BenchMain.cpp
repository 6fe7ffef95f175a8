// brevis-bench: the comparison table users choose a compressor from. For each input
// checkpoint: Brevis at each level (interpreter and JIT decoding), the ZipNN and DFloat11
// schemes written as Brevis programs, the general-purpose peers from Debian's libraries, and
// order-0 entropy references; all measured in one process, interleaved round by round so that
// machine drift hits every compressor alike. Sizes are exact; speeds are medians in GB/s of
// original bytes; peak memory is measured in a forked child per compressor.
#include "tools/api/ArchiveBuilder.h"
#include "tools/api/ArchiveReader.h"
#include "tools/api/Decoding.h"
#include "tools/bench/PeerCodecs.h"

#include "runtime/containers/Archive.h"
#include "runtime/containers/Checksum.h"
#include "runtime/containers/FileIO.h"
#include "runtime/execution/ParallelDecode.h"
#include "runtime/containers/Safetensors.h"
#include "synth/CostModel.h"
#include "synth/Driver.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <functional>
#include <map>
#include <set>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace brevis;
using namespace brevis::bench;
namespace fs = std::filesystem;

namespace {

/// Anything the table compares: compresses a whole file and decompresses it back.
class Compressor {
public:
  virtual ~Compressor() = default;
  virtual std::string name() const = 0;
  virtual bool threadedCompress() const { return false; }
  virtual bool threadedDecompress() const { return false; }
  /// Whether compress() is the same work as the previous compressor's (a JIT variant of the same
  /// level): its compression is timed once and reported for both.
  virtual bool repeatsPreviousCompression() const { return false; }
  virtual Result<Bytes> compress(ByteSpan input, unsigned threads) const = 0;
  virtual Result<Bytes> decompress(ByteSpan compressed, size_t size, unsigned threads) const = 0;
};

class Peer final : public Compressor {
public:
  explicit Peer(std::unique_ptr<PeerCodec> c) : c_(std::move(c)) {}
  std::string name() const override { return c_->name(); }
  bool threadedCompress() const override { return c_->threaded(); }
  Result<Bytes> compress(ByteSpan in, unsigned threads) const override { return c_->compress(in, threads); }
  Result<Bytes> decompress(ByteSpan in, size_t size, unsigned) const override { return c_->decompress(in, size); }

private:
  std::unique_ptr<PeerCodec> c_;
};

/// Brevis as `brevisc compress` runs it (synthesize, print, verify by decoding, write the
/// archive), in memory; decompression as `brevisc decompress` (open, check, decode pieces on
/// threads, verify digests).
class Brevis final : public Compressor {
public:
  Brevis(std::string name, int level, std::string strategy, bool jit)
      : name_(std::move(name)), level_(level), strategy_(std::move(strategy)), jit_(jit) {}
  std::string name() const override { return name_; }
  bool threadedCompress() const override { return true; }
  bool threadedDecompress() const override { return true; }
  bool repeatsPreviousCompression() const override { return jit_; }

  Result<Bytes> compress(ByteSpan in, unsigned threads) const override {
    auto strategy = makeStrategy(strategy_, strategyOptionsForLevel(level_));
    if (!strategy) return strategy.error();
    SynthOutput synth = synthesizeCheckpoint(in, "input.safetensors", "input.bdsl.bin", **strategy, SynthOptions{threads});
    MemberSource member{"input.safetensors", std::move(synth.checkpoint), Payload(std::move(synth.payload)),
                        std::move(synth.digests)};
    Bytes archive;
    VectorPositionalSink sink(archive);
    ArchiveBuilder builder(sink);
    BREVIS_TRY(builder.add(member, DecodeOptions{.threads = threads}));
    BREVIS_TRY(builder.finish(/*directory=*/false));
    return archive;
  }

  Result<Bytes> decompress(ByteSpan in, size_t size, unsigned threads) const override {
    auto reader = ArchiveReader::open(MappedFile::fromBytes(Bytes(in.begin(), in.end())), "bench.brv");
    if (!reader) return reader.error();
    Bytes out(size);
    VectorPositionalSink sink(out);
    DecodeJob job{&reader->checkpoint(0), &reader->payload(0), reader->digests(0), &sink, "bench", {}};
    DecodeOptions options{threads};
    options.jit = jit_;
    BREVIS_TRY(decodeJobs(std::span(&job, 1), options));
    return out;
  }

private:
  std::string name_;
  int level_;
  std::string strategy_; ///< synth/Strategy.h
  bool jit_;
};

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

uint64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

/// Peak resident memory a compress + decompress round trip adds, measured in a forked child:
/// its high-water mark less what it started with, sent back through a pipe.
std::optional<uint64_t> peakMemory(const Compressor &c, ByteSpan input) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  pid_t pid = fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    close(fds[0]);
    struct rusage before {};
    getrusage(RUSAGE_SELF, &before);
    const uint64_t start = std::max<uint64_t>(residentBytes(), static_cast<uint64_t>(before.ru_maxrss) * 1024);
    auto packed = c.compress(input, 1);
    bool ok = packed && c.decompress(*packed, input.size(), 1);
    struct rusage after {};
    getrusage(RUSAGE_SELF, &after);
    uint64_t peak = static_cast<uint64_t>(after.ru_maxrss) * 1024;
    uint64_t added = ok ? (peak > start ? peak - start : 0) : UINT64_MAX;
    (void)!write(fds[1], &added, sizeof added);
    _exit(0);
  }
  close(fds[1]);
  uint64_t added = UINT64_MAX;
  bool got = read(fds[0], &added, sizeof added) == sizeof added;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!got || added == UINT64_MAX) return std::nullopt;
  return added;
}

/// Order-0 entropy references over the float tensors' words (other bytes count as stored).
struct EntropyRefs {
  double wholeWord = 0, exponentRaw = 0, bytePlanes = 0; ///< bytes
};

double entropyBits(const std::map<uint64_t, uint64_t> &counts, uint64_t n) {
  double bits = 0;
  for (const auto &[_, c] : counts) bits -= static_cast<double>(c) * std::log2(static_cast<double>(c) / n);
  return bits;
}

EntropyRefs entropyReferences(ByteSpan file) {
  EntropyRefs refs;
  auto layout = parseSafetensors(file);
  uint64_t covered = 0;
  if (layout) {
    for (const TensorEntry &t : layout->tensors) {
      const DTypeInfo &info = dtypeInfo(t.dtype);
      const unsigned wb = info.wordBits / 8;
      const uint64_t n = (t.end - t.begin) / wb;
      if (!info.isFloat() || n == 0 || wb > 4) continue;
      std::map<uint64_t, uint64_t> words, exps;
      std::vector<std::map<uint64_t, uint64_t>> planes(wb);
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t w = 0;
        std::memcpy(&w, file.data() + t.begin + i * wb, wb);
        ++words[w];
        ++exps[(w >> info.mantissaBits) & ((uint64_t{1} << info.exponentBits) - 1)];
        for (unsigned b = 0; b < wb; ++b) ++planes[b][(w >> (8 * b)) & 0xff];
      }
      refs.wholeWord += entropyBits(words, n) / 8;
      refs.exponentRaw += (entropyBits(exps, n) + static_cast<double>(n) * (info.signBits + info.mantissaBits)) / 8;
      for (auto &p : planes) refs.bytePlanes += entropyBits(p, n) / 8;
      covered += t.end - t.begin;
    }
  }
  const double rest = static_cast<double>(file.size() - covered);
  refs.wholeWord += rest;
  refs.exponentRaw += rest;
  refs.bytePlanes += rest;
  return refs;
}

/// A smaller safetensors file made of whole tensors spread evenly over `file`, at most about
/// `budget` bytes (files that are not safetensors: their first `budget` bytes).
Bytes sample(ByteSpan file, uint64_t budget) {
  auto layout = parseSafetensors(file);
  if (!layout) return Bytes(file.begin(), file.begin() + static_cast<long>(std::min<uint64_t>(budget, file.size())));
  uint64_t total = 0;
  for (const auto &t : layout->tensors) total += t.end - t.begin;
  const uint64_t stride = std::max<uint64_t>(1, (total + budget - 1) / std::max<uint64_t>(budget, 1));
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  Bytes data;
  // Every stride-th tensor that still fits, then the ones after each of those, and so on, until
  // the budget is full: spread over the file, whatever the tensors' sizes; if none fits, the
  // smallest.
  std::vector<size_t> chosen;
  uint64_t used = 0;
  for (uint64_t shift = 0; shift < stride; ++shift)
    for (size_t i = shift; i < layout->tensors.size(); i += stride) {
      const uint64_t n = layout->tensors[i].end - layout->tensors[i].begin;
      if (used + n > budget) continue;
      chosen.push_back(i);
      used += n;
    }
  std::sort(chosen.begin(), chosen.end());
  if (chosen.empty() && !layout->tensors.empty()) {
    size_t smallest = 0;
    for (size_t i = 1; i < layout->tensors.size(); ++i)
      if (layout->tensors[i].end - layout->tensors[i].begin <
          layout->tensors[smallest].end - layout->tensors[smallest].begin)
        smallest = i;
    chosen.push_back(smallest);
  }
  for (size_t i : chosen) {
    const TensorEntry &t = layout->tensors[i];
    header[t.name] = {{"dtype", dtypeInfo(t.dtype).safetensorsName},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + (t.end - t.begin)}}};
    data.insert(data.end(), file.begin() + static_cast<long>(t.begin), file.begin() + static_cast<long>(t.end));
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  Bytes out;
  out.reserve(8 + json.size() + data.size());
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(json.size() >> (8 * i)));
  out.insert(out.end(), json.begin(), json.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string dominantDtype(ByteSpan file) {
  auto layout = parseSafetensors(file);
  if (!layout) return "-";
  std::map<std::string, uint64_t> weights;
  for (const auto &t : layout->tensors)
    weights[std::string(dtypeInfo(t.dtype).bdslName)] += (t.end - t.begin) / std::max(1u, dtypeInfo(t.dtype).wordBits / 8);
  std::string best = "-";
  uint64_t most = 0;
  for (const auto &[d, n] : weights)
    if (n > most) most = n, best = d;
  return best;
}

uint64_t weightCount(ByteSpan file) {
  auto layout = parseSafetensors(file);
  if (!layout) return 0;
  uint64_t n = 0;
  for (const auto &t : layout->tensors) n += (t.end - t.begin) / std::max(1u, dtypeInfo(t.dtype).wordBits / 8);
  return n;
}

struct Row {
  std::string name;
  uint64_t size = 0;
  std::map<unsigned, double> compressSeconds, decompressSeconds; ///< by thread count (medians)
  std::optional<uint64_t> peak;
  bool reference = false; ///< entropy bound or measured elsewhere: size only
  std::string note;
};

struct FileResult {
  std::string name;
  std::string dtype; ///< the dtype holding most of the file's weights ("-" if not safetensors)
  uint64_t bytes = 0, weights = 0;
  bool sampled = false;
  uint64_t originalBytes = 0;
  std::vector<Row> rows;
};

std::string gbps(uint64_t bytes, double seconds) {
  if (seconds <= 0) return "-";
  const double v = static_cast<double>(bytes) / seconds / 1e9;
  return v >= 0.1 ? fmt::format("{:.2f}", v) : fmt::format("{:.4f}", v);
}

void printMarkdown(const FileResult &f, const std::vector<unsigned> &threads, std::ostream &out) {
  out << fmt::format("### {} ({:.1f} MB{})\n\n", f.name, f.bytes / 1e6,
                     f.sampled ? fmt::format(", sampled from {:.1f} MB", f.originalBytes / 1e6) : "");
  out << "| compressor | size | bits/weight |";
  for (unsigned t : threads) out << fmt::format(" compress GB/s T{} |", t);
  for (unsigned t : threads) out << fmt::format(" decompress GB/s T{} |", t);
  out << " peak memory |\n|---|---:|---:|";
  for (size_t i = 0; i < 2 * threads.size(); ++i) out << "---:|";
  out << "---:|\n";
  for (const Row &r : f.rows) {
    out << fmt::format("| {}{} | {:.2f}% | {} |", r.name, r.note.empty() ? "" : " " + r.note,
                       100.0 * r.size / f.bytes, f.weights ? fmt::format("{:.2f}", 8.0 * r.size / f.weights) : "-");
    for (unsigned t : threads) out << " " << (r.reference ? "" : gbps(f.bytes, r.compressSeconds.count(t) ? r.compressSeconds.at(t) : 0)) << " |";
    for (unsigned t : threads) out << " " << (r.reference ? "" : gbps(f.bytes, r.decompressSeconds.count(t) ? r.decompressSeconds.at(t) : 0)) << " |";
    out << " " << (r.peak ? fmt::format("{:.0f} MB", *r.peak / 1e6) : "") << " |\n";
  }
  out << "\n";
}

/// Size (x, % of original) against decompression speed (y, GB/s on one thread), one point per
/// compressor, pooled over all files.
void writeSvg(const std::string &path, const std::vector<std::tuple<std::string, double, double>> &points) {
  const double W = 760, H = 480, L = 70, R = 20, T = 30, B = 50;
  double xmin = 100, xmax = 0, ymax = 0;
  for (const auto &[_, x, y] : points) {
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    ymax = std::max(ymax, y);
  }
  xmin = std::floor(xmin / 5) * 5;
  xmax = std::ceil(xmax / 5) * 5 + (xmax == xmin ? 5 : 0);
  const double ymin = 0.01, ytop = std::pow(10, std::ceil(std::log10(std::max(ymax, 0.02))));
  auto px = [&](double x) { return L + (x - xmin) / (xmax - xmin) * (W - L - R); };
  auto py = [&](double y) {
    return T + (1 - (std::log10(std::max(y, ymin)) - std::log10(ymin)) / (std::log10(ytop) - std::log10(ymin))) * (H - T - B);
  };
  std::ofstream svg(path);
  svg << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)", W, H)
      << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << fmt::format(R"(<text x="{}" y="18" font-size="13">Size vs. decompression speed (one thread; up and left is better)</text>)", L) << "\n";
  for (double x = xmin; x <= xmax + 1e-9; x += 5)
    svg << fmt::format(R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#ddd"/><text x="{0}" y="{3}" text-anchor="middle">{4:.0f}%</text>)",
                       px(x), T, H - B, H - B + 15, x)
        << "\n";
  for (double y = ymin; y <= ytop * 1.0001; y *= 10)
    svg << fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#ddd"/><text x="{3}" y="{4}" text-anchor="end">{5} GB/s</text>)",
                       L, py(y), W - R, L - 5, py(y) + 4, y)
        << "\n";
  svg << fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">compressed size, % of original</text>)", (L + W - R) / 2, H - 12) << "\n";
  for (const auto &[name, x, y] : points) {
    bool brevis = name.rfind("brevis", 0) == 0;
    svg << fmt::format(R"(<circle cx="{}" cy="{}" r="4" fill="{}"/><text x="{}" y="{}">{}</text>)", px(x), py(y),
                       brevis ? "#c0392b" : "#2c3e50", px(x) + 6, py(y) - 4, name)
        << "\n";
  }
  svg << "</svg>\n";
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"brevis-bench: Brevis against general-purpose and tensor compressors, same run, same machine"};
  std::vector<std::string> inputs, peersOnly;
  std::string peersCsv, jsonPath, svgPath, levelsText = "5,9", threadsText = "1,2";
  unsigned rounds = 3;
  double sampleMib = 0;
  bool noJit = false, noMemory = false, quick = false;
  app.add_option("inputs", inputs, "safetensors files or directories of them")->required();
  app.add_option("--rounds", rounds, "timed rounds (medians are reported)")->capture_default_str();
  app.add_option("--levels", levelsText, "Brevis levels to run")->capture_default_str();
  app.add_option("--threads", threadsText, "thread counts to time")->capture_default_str();
  app.add_option("--peers", peersOnly, "only these peers (names as in the table, e.g. \"zstd -3\")");
  app.add_option("--peers-csv", peersCsv, "sizes measured elsewhere (../shared/corpus/PEERS.csv format)");
  app.add_option("--sample-mib", sampleMib, "benchmark larger files on a sample of whole tensors of about this size");
  app.add_option("--json", jsonPath, "also write the results as JSON to this file");
  app.add_option("--svg", svgPath, "also draw size against decompression speed to this SVG file");
  app.add_flag("--no-jit", noJit, "skip Brevis's JIT decoding");
  app.add_flag("--no-memory", noMemory, "skip peak-memory measurement");
  app.add_flag("--quick", quick,
               "one round, no memory measurement, files sampled to 16 MiB, and the slowest peers (zstd -19 --long, zlib -9, xz -9) left out");
  CLI11_PARSE(app, argc, argv);
  for (const std::string &name : peersOnly) {
    std::vector<std::string> known;
    for (const auto &p : allPeers()) known.push_back(p->name());
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::cerr << fmt::format("brevis-bench: error: --peers: no peer called \"{}\" (the peers: {})\n", name,
                               fmt::join(known, ", "));
      return 2;
    }
  }
  if (quick) {
    rounds = 1;
    noMemory = true;
    if (sampleMib == 0) sampleMib = 16;
    if (peersOnly.empty())
      for (const auto &p : allPeers())
        if (p->name() != "zstd -19 --long" && p->name() != "zlib -9" && p->name() != "xz -9") peersOnly.push_back(p->name());
  }

  auto parseList = [](const std::string &s) {
    std::vector<unsigned> v;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');) v.push_back(static_cast<unsigned>(std::stoul(item)));
    return v;
  };
  std::vector<unsigned> levels = parseList(levelsText), threads = parseList(threadsText);

  std::vector<std::unique_ptr<Compressor>> compressors;
  for (unsigned level : levels) {
    compressors.push_back(std::make_unique<Brevis>(fmt::format("brevis -l{}", level), level, std::string(kDefaultStrategy), false));
    if (!noJit)
      compressors.push_back(std::make_unique<Brevis>(fmt::format("brevis -l{} --jit", level), level, std::string(kDefaultStrategy), true));
  }
  compressors.push_back(std::make_unique<Brevis>("brevis zipnn scheme", 9, "zipnn", false));
  compressors.push_back(std::make_unique<Brevis>("brevis dfloat11 scheme", 9, "dfloat11", false));
  for (auto &p : allPeers(peersOnly)) compressors.push_back(std::make_unique<Peer>(std::move(p)));

  std::map<std::string, std::map<std::string, std::string>> elsewhere; // file -> column -> pct
  if (!peersCsv.empty()) {
    std::ifstream csv(peersCsv);
    std::string line, headerLine;
    std::getline(csv, headerLine);
    auto chomp = [](std::string &l) {
      while (!l.empty() && (l.back() == '\r' || l.back() == '\n')) l.pop_back();
    };
    chomp(headerLine);
    std::vector<std::string> cols;
    std::stringstream hs(headerLine);
    for (std::string c; std::getline(hs, c, ',');) cols.push_back(c);
    while (std::getline(csv, line)) {
      chomp(line);
      std::vector<std::string> cells;
      std::stringstream ls(line);
      for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
      for (size_t i = 1; i < cells.size() && i < cols.size(); ++i) elsewhere[cells[0]][cols[i]] = cells[i];
    }
  }

  std::vector<std::string> files;
  for (const auto &in : inputs) {
    if (fs::is_directory(in)) {
      for (const auto &e : fs::recursive_directory_iterator(in))
        if (e.is_regular_file() && e.path().extension() == ".safetensors") files.push_back(e.path().string());
    } else {
      files.push_back(in);
    }
  }
  std::sort(files.begin(), files.end());

  std::vector<FileResult> results;
  for (const std::string &path : files) {
    auto mapped = MappedFile::open(path);
    if (!mapped) {
      std::cerr << "brevis-bench: " << mapped.error().message << "\n";
      return 1;
    }
    FileResult f;
    f.name = fs::path(path).filename().string();
    f.originalBytes = (*mapped)->bytes().size();
    Bytes sampled;
    ByteSpan input = (*mapped)->bytes();
    if (sampleMib > 0 && input.size() > sampleMib * (1 << 20)) {
      sampled = sample(input, static_cast<uint64_t>(sampleMib * (1 << 20)));
      input = sampled;
      f.sampled = true;
    }
    f.bytes = input.size();
    f.weights = weightCount(input);
    f.dtype = dominantDtype(input);
    std::cerr << fmt::format("brevis-bench: {} ({:.1f} MB)\n", f.name, f.bytes / 1e6);

    std::vector<Row> rows(compressors.size());
    std::vector<Bytes> packed(compressors.size());
    for (size_t c = 0; c < compressors.size(); ++c) {
      rows[c].name = compressors[c]->name();
      auto p = compressors[c]->repeatsPreviousCompression() ? Result<Bytes>(packed[c - 1]) : compressors[c]->compress(input, 1);
      if (!p) {
        std::cerr << fmt::format("brevis-bench: {}: {}: {}\n", f.name, rows[c].name, p.error().message);
        return 1;
      }
      packed[c] = std::move(*p);
      rows[c].size = packed[c].size();
      auto back = compressors[c]->decompress(packed[c], input.size(), 1);
      if (!back) {
        std::cerr << fmt::format("brevis-bench: {}: {}: {}\n", f.name, rows[c].name, back.error().message);
        return 1;
      }
      if (!std::equal(back->begin(), back->end(), input.begin(), input.end())) {
        std::cerr << fmt::format("brevis-bench: {}: {} does not give back the input\n", f.name, rows[c].name);
        return 1;
      }
    }
    std::map<std::pair<size_t, unsigned>, std::vector<double>> ct, dt;
    for (unsigned r = 0; r < rounds; ++r)
      for (size_t c = 0; c < compressors.size(); ++c)
        for (unsigned t : threads) {
          if (t > 1 && !compressors[c]->threadedCompress() && !compressors[c]->threadedDecompress()) continue;
          double t0 = now();
          if (!compressors[c]->repeatsPreviousCompression() && !compressors[c]->compress(input, t)) return 1;
          double t1 = now();
          auto back = compressors[c]->decompress(packed[c], input.size(), t);
          double t2 = now();
          if (!back) return 1;
          if (compressors[c]->repeatsPreviousCompression()) ct[{c, t}] = ct[{c - 1, t}];
          else ct[{c, t}].push_back(t1 - t0);
          dt[{c, t}].push_back(t2 - t1);
        }
    for (size_t c = 0; c < compressors.size(); ++c) {
      for (unsigned t : threads) {
        // A single-threaded codec runs the same with more threads offered.
        unsigned key = (t > 1 && !compressors[c]->threadedCompress() && !compressors[c]->threadedDecompress()) ? 1 : t;
        if (!ct.count({c, key})) continue;
        rows[c].compressSeconds[t] = median(ct[{c, key}]);
        rows[c].decompressSeconds[t] = median(dt[{c, key}]);
      }
      if (!noMemory) rows[c].peak = peakMemory(*compressors[c], input);
    }

    EntropyRefs refs = entropyReferences(input);
    rows.push_back(Row{"order-0 entropy: whole words", static_cast<uint64_t>(refs.wholeWord), {}, {}, {}, true, "(bound)"});
    rows.push_back(Row{"order-0 entropy: exponent + raw rest", static_cast<uint64_t>(refs.exponentRaw), {}, {}, {}, true, "(bound)"});
    rows.push_back(Row{"order-0 entropy: byte planes", static_cast<uint64_t>(refs.bytePlanes), {}, {}, {}, true, "(bound)"});
    if (!f.sampled && elsewhere.count(f.name))
      for (const auto &[col, label] : std::vector<std::pair<std::string, std::string>>{
               {"zipnn_pct", "ZipNN"}, {"openzl_best_pct", "OpenZL (best)"}, {"dfloat11_scheme_pct", "DFloat11 scheme"}}) {
        const std::string &v = elsewhere[f.name][col];
        if (v.empty()) continue;
        rows.push_back(Row{label, static_cast<uint64_t>(std::stod(v) / 100 * f.bytes), {}, {}, {}, true, "(measured elsewhere)"});
      }
    f.rows = std::move(rows);
    results.push_back(std::move(f));
  }

  // Tables per file, then pooled over all files.
  std::cout << "## Per file\n\n";
  for (const auto &f : results) {
    printMarkdown(f, threads, std::cout);
    if (!f.sampled && elsewhere.count(f.name)) {
      const auto &e = elsewhere.at(f.name);
      double best = std::stod(e.at("best_peer_pct"));
      double brevis = 100.0 * f.rows[0].size / f.bytes;
      std::cout << fmt::format("Best peer ({}): {:.2f}%; {}: {:.2f}% ({:+.2f} points).\n\n", e.at("best_peer"), best,
                               f.rows[0].name, brevis, brevis - best);
    }
  }
  // Pooled: all files, then the files of each dominant dtype (bits per weight by dtype).
  auto pool = [&](const std::string &title, const std::function<bool(const FileResult &)> &take) {
    FileResult pooled;
    size_t files = 0;
    for (const auto &f : results)
      if (take(f)) {
        pooled.bytes += f.bytes;
        pooled.weights += f.weights;
        ++files;
      }
    pooled.name = fmt::format("{}, {} files", title, files);
    for (size_t c = 0; c < compressors.size(); ++c) {
      Row r;
      r.name = compressors[c]->name();
      for (const auto &f : results) {
        if (!take(f)) continue;
        r.size += f.rows[c].size;
        for (const auto &[t, s] : f.rows[c].compressSeconds) r.compressSeconds[t] += s;
        for (const auto &[t, s] : f.rows[c].decompressSeconds) r.decompressSeconds[t] += s;
        if (f.rows[c].peak) r.peak = std::max(r.peak.value_or(0), *f.rows[c].peak);
      }
      pooled.rows.push_back(std::move(r));
    }
    return pooled;
  };
  FileResult pooled = pool("all files", [](const FileResult &) { return true; });
  std::cout << "## Pooled\n\n";
  printMarkdown(pooled, threads, std::cout);
  std::set<std::string> dtypes;
  for (const auto &f : results) dtypes.insert(f.dtype);
  if (dtypes.size() > 1)
    for (const std::string &d : dtypes)
      printMarkdown(pool("files mostly " + d, [&](const FileResult &f) { return f.dtype == d; }), threads, std::cout);

  if (!svgPath.empty()) {
    std::vector<std::tuple<std::string, double, double>> points;
    for (const Row &r : pooled.rows)
      points.emplace_back(r.name, 100.0 * r.size / pooled.bytes,
                          r.decompressSeconds.count(1) ? pooled.bytes / r.decompressSeconds.at(1) / 1e9 : 0);
    writeSvg(svgPath, points);
  }
  if (!jsonPath.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto *group : {&results}) {
      for (const auto &f : *group) {
        nlohmann::json jf = {{"file", f.name}, {"bytes", f.bytes}, {"weights", f.weights}, {"sampled", f.sampled},
                             {"original_bytes", f.originalBytes}, {"rows", nlohmann::json::array()}};
        for (const Row &r : f.rows) {
          nlohmann::json jr = {{"name", r.name}, {"size", r.size}, {"reference", r.reference}};
          for (const auto &[t, s] : r.compressSeconds) jr["compress_gbps_t" + std::to_string(t)] = f.bytes / s / 1e9;
          for (const auto &[t, s] : r.decompressSeconds) jr["decompress_gbps_t" + std::to_string(t)] = f.bytes / s / 1e9;
          if (r.peak) jr["peak_bytes"] = *r.peak;
          jf["rows"].push_back(jr);
        }
        j.push_back(jf);
      }
    }
    std::ofstream(jsonPath) << j.dump(2) << "\n";
  }
  return 0;
}
