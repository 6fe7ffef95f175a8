#include "runtime/codecs/context/ContextCodec.h"

#include "runtime/codecs/huffman/HuffmanEncode.h"
#include "runtime/common/Varint.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

namespace brevis {

namespace {

// Probabilities of a 0 bit, in 1/4096ths; a model starts at even odds.
constexpr unsigned kProbBits = 12;
constexpr uint16_t kProbOne = 1u << kProbBits;
constexpr uint16_t kProbInit = kProbOne / 2;
// The range is renormalized to keep at least 24 bits.
constexpr uint32_t kTopValue = 1u << 24;
// The escape flag's model is chosen by the flags of the two words before (4 models; one or
// three words back coded sparse corpus tensors within 0.5% of two).
constexpr unsigned kFlagContexts = 4;

/// Where each lane's bits and models are: lane 0 is the top.
struct Lanes {
  unsigned count = 1;
  std::array<unsigned, 4> bits{};     ///< bits of each lane
  std::array<unsigned, 4> shift{};    ///< the lane's lowest bit in the word
  std::array<size_t, 4> modelBase{};  ///< first model of the lane
  size_t flagBase = 0;                ///< the escape flag's models (after the lanes')
  size_t models = 0;
  unsigned raw = 0;                   ///< low bits of the last lane stored as they are

  explicit Lanes(unsigned width, bool escape = false, unsigned rawBits = 0) : raw(rawBits) {
    count = (width + 7) / 8;
    for (unsigned l = 0; l < count; ++l) {
      shift[l] = 8 * (count - 1 - l);
      bits[l] = l == 0 ? width - 8 * (count - 1) : 8;
      // Contexts: the previous word's top lane for lane 0, else the lane above; one model per
      // bit-tree node (1 .. 2^bits - 1) in each.
      const size_t contexts = size_t{1} << (l == 0 ? bits[0] : bits[l - 1]);
      modelBase[l] = models;
      models += contexts << bits[l];
    }
    flagBase = models;
    if (escape) models += kFlagContexts;
  }
};

/// Where a walk over a block's words stands between two runs of them: the top lane of the last
/// word coded through the lanes (the escape word is not), and whether each of the last two
/// words was the escape word (bit 0 the last), which chooses the flag's model.
struct WalkState {
  unsigned previousTop = 0;
  unsigned flags = 0;
  [[gnu::always_inline]] void pushFlag(unsigned flag) { flags = ((flags << 1) | flag) & (kFlagContexts - 1); }
};

/// Cost units per bit of the simulated code length: costs are summed as integers, which add in
/// one cycle where a floating-point sum's four were most of a simulation.
constexpr double kCostUnitsPerBit = 1 << 16;

/// Cost of coding a 0 with probability p/4096 (a 1: the same of kProbOne - p), in kCostUnitsPerBit.
struct CostTable {
  std::array<uint32_t, kProbOne + 1> cost{};
  CostTable() {
    cost[0] = static_cast<uint32_t>((kProbBits + 8) * kCostUnitsPerBit); // never coded: models stay inside (0, 4096)
    for (unsigned p = 1; p <= kProbOne; ++p)
      cost[p] = static_cast<uint32_t>(std::lround(-std::log2(static_cast<double>(p) / kProbOne) * kCostUnitsPerBit));
  }
};

inline void adapt(uint16_t &p, unsigned bit, unsigned rate) {
  const auto towardsOne = static_cast<uint16_t>(p - (p >> rate));
  const auto towardsZero = static_cast<uint16_t>(p + ((kProbOne - p) >> rate));
  p = bit ? towardsOne : towardsZero;
}

/// The top lane of word w.
inline unsigned topLane(uint64_t w, const Lanes &lanes) {
  return static_cast<unsigned>(w >> lanes.shift[0]) & ((1u << lanes.bits[0]) - 1);
}

/// A block's models, set to even odds a tree (the models of one lane in one context) at a time,
/// when a word first uses it. A 16-bit word has 512 trees (256 KB of models); a block of a few
/// thousand words touches few of them, and setting them all before decoding was a quarter of
/// the instructions of decoding a checkpoint of small tensors (and before simulating one, most
/// of the search's time on small tensors). The memory is the thread's, reused from block to
/// block; a tree's stamp says whether it was set for this block. A model is a probability (T =
/// uint16_t), or the probabilities of the simulation's two rates (uint32_t, rate 0's low).
template <typename T> class LazyTrees {
public:
  LazyTrees(const Lanes &lanes, T even) : lanes_(lanes), even_(even) {
    size_t trees = 0;
    for (unsigned l = 0; l < lanes.count; ++l) {
      treeBase_[l] = trees;
      trees += size_t{1} << (l == 0 ? lanes.bits[0] : lanes.bits[l - 1]);
    }
    thread_local std::vector<T> models;
    thread_local std::vector<uint32_t> stamps;
    thread_local uint32_t generation = 0;
    if (models.size() < lanes.models) models.resize(lanes.models);
    if (stamps.size() < trees) stamps.resize(trees, 0);
    if (++generation == 0) { // after 2^32 blocks every stamp could look current: clear them
      std::fill(stamps.begin(), stamps.end(), 0);
      generation = 1;
    }
    models_ = models.data();
    stamps_ = stamps.data();
    generation_ = generation;
  }

  /// The models of lane `lane` in context `context`, indexed by bit-tree node (1 ..).
  [[gnu::always_inline]] T *tree(unsigned lane, unsigned context) {
    T *const t = models_ + lanes_.modelBase[lane] + (size_t{context} << lanes_.bits[lane]);
    uint32_t &stamp = stamps_[treeBase_[lane] + context];
    if (stamp != generation_) [[unlikely]] {
      stamp = generation_;
      std::fill_n(t, size_t{1} << lanes_.bits[lane], even_);
    }
    return t;
  }

  /// One lane's trees, for a loop that knows its width (Bits).
  struct Lane {
    T *models;
    uint32_t *stamps;
    uint32_t generation;
    T even;
    template <unsigned Bits> [[gnu::always_inline]] T *tree(unsigned context) {
      T *const t = models + (size_t{context} << Bits);
      if (stamps[context] != generation) [[unlikely]] {
        stamps[context] = generation;
        std::fill_n(t, size_t{1} << Bits, even);
      }
      return t;
    }
  };
  Lane lane(unsigned l) { return {models_ + lanes_.modelBase[l], stamps_ + treeBase_[l], generation_, even_}; }

private:
  const Lanes &lanes_;
  T even_;
  std::array<size_t, 4> treeBase_{};
  T *models_ = nullptr;
  uint32_t *stamps_ = nullptr;
  uint32_t generation_ = 0;
};

/// The decoder's models.
struct BlockModels : LazyTrees<uint16_t> {
  explicit BlockModels(const Lanes &lanes) : LazyTrees<uint16_t>(lanes, kProbInit) {}
};
using LaneTrees = BlockModels::Lane;

/// A bit's level for walkBits' callback outside the last lane.
constexpr unsigned kNotLastLane = ~0u;

/// Calls code(model index, bit, level) for every bit coded of `words` in coding order (with an
/// escape word, each word's flag, then the lanes of a word that is not it), from `state`; level
/// is the bit's place in the last lane (0 its lowest), else kNotLastLane. A word's raw low bits
/// (lanes.raw of them) go to raw(bits) after its coded ones.
template <typename W, typename Code, typename Raw>
void walkBits(std::span<const W> words, const Lanes &lanes, const std::optional<uint64_t> &escape, Code &&code,
              Raw &&raw, WalkState &state) {
  unsigned &previousTop = state.previousTop;
  for (uint64_t w : words) {
    if (escape) {
      const unsigned flag = w == *escape;
      code(lanes.flagBase + state.flags, flag, kNotLastLane);
      state.pushFlag(flag);
      if (flag) continue;
    }
    unsigned context = previousTop;
    for (unsigned l = 0; l < lanes.count; ++l) {
      const unsigned bits = lanes.bits[l];
      const bool last = l + 1 == lanes.count;
      const unsigned value = static_cast<unsigned>(w >> lanes.shift[l]) & ((1u << bits) - 1);
      const size_t base = lanes.modelBase[l] + (size_t{context} << bits);
      unsigned node = 1;
      for (unsigned i = bits; i-- > (last ? lanes.raw : 0);) {
        const unsigned bit = (value >> i) & 1;
        code(base + node, bit, last ? i : kNotLastLane);
        node = node * 2 + bit;
      }
      if (last && lanes.raw) raw(value & ((1u << lanes.raw) - 1));
      if (l == 0) previousTop = value;
      context = value;
    }
  }
}

/// Raw bits appended to bytes from the least significant bit of each.
class RawBitWriter {
public:
  explicit RawBitWriter(Bytes &out) : out_(out) {}
  void put(unsigned value, unsigned bits) {
    pending_ |= uint64_t{value} << count_;
    count_ += bits;
    for (; count_ >= 8; count_ -= 8, pending_ >>= 8) out_.push_back(static_cast<uint8_t>(pending_));
  }
  void finish() {
    if (count_) out_.push_back(static_cast<uint8_t>(pending_));
    pending_ = 0;
    count_ = 0;
  }

private:
  Bytes &out_;
  uint64_t pending_ = 0;
  unsigned count_ = 0;
};

/// Reads what RawBitWriter wrote; reading past the end gives zeros and is remembered.
class RawBitReader {
public:
  RawBitReader(const uint8_t *begin, const uint8_t *end) : begin_(begin), p_(begin), end_(end) {}
  [[gnu::always_inline]] unsigned read(unsigned bits) {
    if (count_ < bits) [[unlikely]] refill(bits);
    const auto value = static_cast<unsigned>(pending_ & ((uint64_t{1} << bits) - 1));
    pending_ >>= bits;
    count_ -= bits;
    return value;
  }
  /// Whether exactly the bytes the reads needed were there, the last one's unread bits zero (as
  /// written: so that one literal has one encoding).
  bool exact() const {
    const uint64_t read = 8 * static_cast<uint64_t>(p_ - begin_) - count_;
    if (overrun_ || (read + 7) / 8 != static_cast<uint64_t>(end_ - begin_)) return false;
    // The last byte was loaded (it holds read bits), so its unread bits are pending_'s lowest.
    const unsigned unread = static_cast<unsigned>(-read & 7);
    return (pending_ & ((uint64_t{1} << unread) - 1)) == 0;
  }

private:
  void refill(unsigned bits) {
    if (end_ - p_ >= 8) {
      uint64_t next;
      std::memcpy(&next, p_, 8);
      pending_ |= next << count_; // little-endian, as every target here
      p_ += (63 - count_) / 8;
      count_ |= 56;
      return;
    }
    for (; count_ <= 56 && p_ != end_; count_ += 8) pending_ |= uint64_t{*p_++} << count_;
    if (count_ < bits) {
      overrun_ = true;
      count_ = bits;
    }
  }
  const uint8_t *begin_;
  const uint8_t *p_;
  const uint8_t *end_;
  uint64_t pending_ = 0;
  unsigned count_ = 0;
  bool overrun_ = false;
};

class RangeEncoder {
public:
  explicit RangeEncoder(Bytes &out) : out_(out) {}
  void encode(uint16_t &p, unsigned bit, unsigned rate) {
    const uint32_t bound = (range_ >> kProbBits) * p;
    low_ += bit ? bound : 0;
    range_ = bit ? range_ - bound : bound;
    adapt(p, bit, rate);
    while (range_ < kTopValue) {
      range_ <<= 8;
      shiftLow();
    }
  }
  void finish() {
    for (int i = 0; i < 5; ++i) shiftLow();
  }

private:
  // Bytes wait in cache_ (and a run of 0xff after it) until a carry can no longer reach them.
  void shiftLow() {
    if (static_cast<uint32_t>(low_) < 0xff000000u || (low_ >> 32) != 0) {
      const auto carry = static_cast<uint8_t>(low_ >> 32);
      if (!first_) out_.push_back(static_cast<uint8_t>(cache_ + carry));
      first_ = false;
      for (; pending_; --pending_) out_.push_back(static_cast<uint8_t>(0xff + carry));
      cache_ = static_cast<uint8_t>(low_ >> 24);
    } else {
      ++pending_;
    }
    low_ = (low_ & 0x00ffffffu) << 8;
  }
  Bytes &out_;
  uint64_t low_ = 0;
  uint32_t range_ = 0xffffffffu;
  uint8_t cache_ = 0;
  uint64_t pending_ = 0;
  bool first_ = true; // the first byte out is always 0 (low starts below 2^32): not stored
};

class RangeDecoder {
public:
  RangeDecoder(const uint8_t *begin, const uint8_t *end) : p_(begin), end_(end) {
    for (int i = 0; i < 4; ++i) code_ = (code_ << 8) | next();
  }
  /// The next bit, by model p (adapted).
  [[gnu::always_inline]] unsigned decode(uint16_t &p, unsigned rate) {
    uint32_t unused = 0;
    return decodeBranch(p, p, rate, unused, 0);
  }
  /// The next bit without a branch on it, for a model `p` the caller loaded ahead (stored back
  /// adapted into `model`); `child` becomes `child1` if the bit is 1. A bit near even odds
  /// mispredicts a branch every other time, so the caller loads both children's models while
  /// this bit decodes and this picks one (on x86-64 by conditional moves on one comparison:
  /// the compiler turns the selects into a branch).
  [[gnu::always_inline]] unsigned decodeSelect(uint32_t p, uint16_t &model, unsigned rate, uint32_t &child,
                                               uint32_t child1) {
    uint32_t bound = (range_ >> kProbBits) * p;
    const uint32_t codeLess = code_ - bound, rangeLess = range_ - bound;
    const uint32_t towardsOne = p - (p >> rate);
    uint32_t adapted = p + ((kProbOne - p) >> rate);
    unsigned bit = 0;
#if defined(__x86_64__)
    asm("cmpl %[bound], %[code]\n\t"
        "cmovael %[codeLess], %[code]\n\t"
        "cmovael %[rangeLess], %[bound]\n\t"
        "cmovael %[towardsOne], %[adapted]\n\t"
        "cmovael %[child1], %[child]\n\t"
        "setae %b[bit]"
        : [code] "+r"(code_), [bound] "+r"(bound), [adapted] "+r"(adapted), [child] "+r"(child), [bit] "+q"(bit)
        : [codeLess] "r"(codeLess), [rangeLess] "r"(rangeLess), [towardsOne] "r"(towardsOne), [child1] "r"(child1)
        : "cc");
#else
    bit = code_ >= bound;
    code_ = bit ? codeLess : code_;
    bound = bit ? rangeLess : bound;
    adapted = bit ? towardsOne : adapted;
    child = bit ? child1 : child;
#endif
    range_ = bound;
    model = static_cast<uint16_t>(adapted);
    while (range_ < kTopValue) {
      range_ <<= 8;
      code_ = (code_ << 8) | next();
    }
    return bit;
  }
  /// decode() with a branch on the bit, for a model `p` the caller loaded ahead, with
  /// decodeSelect's children: on skewed bits the branch is predicted, and the next bit's work
  /// starts before this one's comparison resolves.
  [[gnu::always_inline]] unsigned decodeBranch(uint32_t p, uint16_t &model, unsigned rate, uint32_t &child,
                                               uint32_t child1) {
    const uint32_t bound = (range_ >> kProbBits) * p;
    unsigned bit;
    if (code_ < bound) {
      range_ = bound;
      model = static_cast<uint16_t>(p + ((kProbOne - p) >> rate));
      bit = 0;
    } else {
      code_ -= bound;
      range_ -= bound;
      model = static_cast<uint16_t>(p - (p >> rate));
      child = child1;
      bit = 1;
    }
    while (range_ < kTopValue) {
      range_ <<= 8;
      code_ = (code_ << 8) | next();
    }
    return bit;
  }
  /// Decodes bits by `model` while they are 1, at most `limit` of them, and returns how many 1s
  /// it decoded; a run shorter than `limit` ended by a 0, decoded too. The model is adapted by
  /// every bit, as decode() adapts it. A sparse tensor's escape flags come in runs of thousands:
  /// here the model and the coder's state stay in registers from one flag to the next, where
  /// the word loop stores and reloads them.
  uint64_t decodeOnes(uint16_t &model, unsigned rate, uint64_t limit) {
    uint32_t p = model;
    uint64_t ones = 0;
    for (; ones < limit; ++ones) {
      const uint32_t bound = (range_ >> kProbBits) * p;
      const bool zero = code_ < bound;
      if (zero) {
        range_ = bound;
        p += (kProbOne - p) >> rate;
      } else {
        code_ -= bound;
        range_ -= bound;
        p -= p >> rate;
      }
      while (range_ < kTopValue) {
        range_ <<= 8;
        code_ = (code_ << 8) | next();
      }
      if (zero) break;
    }
    model = static_cast<uint16_t>(p);
    return ones;
  }
  /// Whether the block needed bytes beyond its end.
  bool overran() const { return overrun_; }

private:
  uint32_t next() {
    if (p_ == end_) {
      overrun_ = true;
      return 0;
    }
    return *p_++;
  }
  const uint8_t *p_;
  const uint8_t *end_;
  uint32_t code_ = 0;
  uint32_t range_ = 0xffffffffu;
  bool overrun_ = false;
};

} // namespace

namespace {

/// One simulated step, for a model's probability p of a 0 and the bit coded: the bit's cost
/// and where each tried rate moves p. A step is then two loads and an add per rate, where
/// computing the cost's index and both adaptations took three times the instructions.
struct SimulatedStep {
  uint32_t cost;
  std::array<uint16_t, kContextTriedRates> next;
};
struct SimulationTable {
  std::array<std::array<SimulatedStep, kProbOne + 1>, 2> step{}; ///< [bit][p]
  /// The same as [2p + bit]: a step's entry from p and the bit in one address.
  std::array<SimulatedStep, 2 * (kProbOne + 1)> interleaved{};
  SimulationTable() {
    const CostTable table;
    for (unsigned bit = 0; bit < 2; ++bit)
      for (unsigned p = 0; p <= kProbOne; ++p) {
        SimulatedStep &s = step[bit][p];
        s.cost = table.cost[bit ? kProbOne - p : p];
        for (unsigned r = 0; r < kContextTriedRates; ++r) {
          auto q = static_cast<uint16_t>(p);
          adapt(q, bit, kContextMinRate + r);
          s.next[r] = q;
        }
        interleaved[2 * p + bit] = s;
      }
  }
};

/// `n` steps of the same bit at model p, as many calls of rates.step(p, bit): one at a time
/// until a step leaves p as it was (at every rate), then the rest at once by `repeat(p, rest)`,
/// which adds their cost (each the same). A sparse tensor's escape flags come in runs of
/// thousands, and a model stops moving within about a hundred steps of one bit.
template <typename Rates, typename Repeat>
[[gnu::always_inline]] inline void stepRunOf(Rates &rates, typename Rates::Model &p, unsigned bit, uint64_t n,
                                             Repeat &&repeat) {
  while (n) {
    const typename Rates::Model before = p;
    rates.step(p, bit);
    --n;
    if (p == before) {
      if (n) repeat(p, n);
      return;
    }
  }
}

/// The simulation's models and sums at both tried rates: a node's two probabilities in one
/// word, rate 0's low.
struct BothRates {
  using Model = uint32_t;
  static constexpr Model kEven = kProbInit | uint32_t{kProbInit} << 16;
  const SimulatedStep *steps;
  uint64_t units[2] = {0, 0};
  [[gnu::always_inline]] void step(Model &p, unsigned bit) {
    const SimulatedStep &a = steps[2 * (p & 0xffff) + bit], &b = steps[2 * (p >> 16) + bit];
    units[0] += a.cost;
    units[1] += b.cost;
    p = a.next[0] | uint32_t{b.next[1]} << 16;
  }
  /// A step of the last lane at level `at` (BothRatesByLevel sums those apart).
  [[gnu::always_inline]] void stepAt(unsigned, Model &p, unsigned bit) { step(p, bit); }
  /// `n` steps of `bit` at one model (stepRun).
  void stepRun(Model &p, unsigned bit, uint64_t n) {
    stepRunOf(*this, p, bit, n, [&](Model q, uint64_t more) {
      units[0] += more * steps[2 * (q & 0xffff) + bit].cost;
      units[1] += more * steps[2 * (q >> 16) + bit].cost;
    });
  }
};

/// One rate's models and sum: tried rate R (kContextMinRate + R) alone.
template <unsigned R> struct OneRate {
  using Model = uint16_t;
  static constexpr Model kEven = kProbInit;
  const SimulatedStep *steps;
  uint64_t units[1] = {0};
  [[gnu::always_inline]] void step(Model &p, unsigned bit) {
    const SimulatedStep &a = steps[2 * p + bit];
    units[0] += a.cost;
    p = a.next[R];
  }
  [[gnu::always_inline]] void stepAt(unsigned, Model &p, unsigned bit) { step(p, bit); }
  void stepRun(Model &p, unsigned bit, uint64_t n) {
    stepRunOf(*this, p, bit, n, [&](Model q, uint64_t more) { units[0] += more * steps[2 * q + bit].cost; });
  }
};

/// BothRates, which also sums the last lane's costs by the bit's level in it (0 the lowest): what
/// choosing raw low bits needs.
struct BothRatesByLevel : BothRates {
  uint64_t level[2][kContextMaxRawBits] = {};
  [[gnu::always_inline]] void stepAt(unsigned at, Model &p, unsigned bit) {
    const SimulatedStep &a = steps[2 * (p & 0xffff) + bit], &b = steps[2 * (p >> 16) + bit];
    units[0] += a.cost;
    units[1] += b.cost;
    level[0][at] += a.cost;
    level[1][at] += b.cost;
    p = a.next[0] | uint32_t{b.next[1]} << 16;
  }
};

/// The simulation of words of one or two lanes, the top one of TopBits bits, the other (if any)
/// of 8: each lane's steps unrolled, the sums in registers (walkBits' general loop took 34
/// instructions a step, most of the search's time on small tensors). Adds the words' cost to
/// `rates`' sums; `state` is where the walk stands before the first word, and after the last.
/// With Escape, each word's flag is coded first by `flags[state.flags]`.
template <typename W, unsigned LaneCount, unsigned TopBits, bool Escape, typename Rates>
void simulateNarrowWords(std::span<const W> words, LazyTrees<typename Rates::Model> &models, Rates &rates,
                         WalkState &state, typename Rates::Model *flags, W escape) {
  using Model = typename Rates::Model;
  Rates local = rates; // its sums in registers
  unsigned prev = state.previousTop;
  WalkState flagState = state;
  // The node of a lane's k-th bit from the top is 1 followed by the bits above it, so each step
  // reads its model off the lane's value: no chain from one step's bit to the next's address.
  auto walk = [&]<unsigned Bits, bool Last>(Model *tree, unsigned value, std::integral_constant<unsigned, Bits>,
                                            std::bool_constant<Last>) {
    [&]<unsigned... K>(std::integer_sequence<unsigned, K...>) {
      (
          [&] {
            constexpr unsigned above = Bits - K; // bits of the value above this step's
            Model &p = tree[(1u << K) | (value >> above)];
            const unsigned bit = (value >> (above - 1)) & 1;
            if constexpr (Last) local.stepAt(above - 1, p, bit);
            else local.step(p, bit);
          }(),
          ...);
    }(std::make_integer_sequence<unsigned, Bits>{});
  };
  for (size_t i = 0; i < words.size(); ++i) {
    const W w = words[i];
    if constexpr (Escape) {
      if (w == escape && flagState.flags == kFlagContexts - 1) {
        // After two escape words, the run of them: one model, one bit.
        size_t end = i + 1;
        while (end < words.size() && words[end] == escape) ++end;
        local.stepRun(flags[kFlagContexts - 1], 1, end - i);
        i = end - 1;
        continue;
      }
      const unsigned flag = w == escape;
      local.step(flags[flagState.flags], flag);
      flagState.pushFlag(flag);
      if (flag) continue;
    }
    const unsigned top = static_cast<unsigned>(uint64_t{w} >> (LaneCount == 2 ? 8 : 0)) & ((1u << TopBits) - 1);
    walk(models.tree(0, prev), top, std::integral_constant<unsigned, TopBits>{}, std::bool_constant<LaneCount == 1>{});
    prev = top;
    if constexpr (LaneCount == 2)
      walk(models.tree(1, top), static_cast<unsigned>(w) & 0xff, std::integral_constant<unsigned, 8>{}, std::true_type{});
  }
  rates = local;
  state = flagState;
  state.previousTop = prev;
}

template <typename W, bool Escape, typename Rates>
void simulateNarrowWords(std::span<const W> words, const Lanes &lanes, LazyTrees<typename Rates::Model> &models,
                         Rates &rates, WalkState &state, typename Rates::Model *flags, W escape) {
  const bool two = lanes.count == 2;
  switch (lanes.bits[0]) {
#define BREVIS_TOP_BITS(b)                                                                                               \
  case b:                                                                                                                \
    return two ? simulateNarrowWords<W, 2, b, Escape>(words, models, rates, state, flags, escape)                        \
               : simulateNarrowWords<W, 1, b, Escape>(words, models, rates, state, flags, escape);
    BREVIS_TOP_BITS(1) BREVIS_TOP_BITS(2) BREVIS_TOP_BITS(3) BREVIS_TOP_BITS(4)
    BREVIS_TOP_BITS(5) BREVIS_TOP_BITS(6) BREVIS_TOP_BITS(7) BREVIS_TOP_BITS(8)
#undef BREVIS_TOP_BITS
  default: assert(false && "a lane holds 1 to 8 bits");
  }
}

/// A simulation of one block of words of one or two lanes, run over its words a part at a time:
/// its models, flags and walk carry from one part to the next.
template <typename W, typename Rates> class NarrowSimulation {
public:
  NarrowSimulation(const Lanes &lanes, const std::optional<uint64_t> &escape)
      : lanes_(lanes), escape_(escape), models_(lanes, Rates::kEven) {
    std::fill(std::begin(flags_), std::end(flags_), Rates::kEven);
  }
  /// Adds the cost of `words`, the next of the block's, to `rates`' sums.
  void run(std::span<const W> words, Rates &rates) {
    if (escape_) simulateNarrowWords<W, true>(words, lanes_, models_, rates, state_, flags_, static_cast<W>(*escape_));
    else simulateNarrowWords<W, false>(words, lanes_, models_, rates, state_, flags_, W{0});
  }

private:
  const Lanes &lanes_;
  const std::optional<uint64_t> &escape_;
  LazyTrees<typename Rates::Model> models_;
  typename Rates::Model flags_[kFlagContexts];
  WalkState state_;
};

/// The bits of words [0, split) and of words [split, end) of words of one or two lanes, by
/// `rates`, the second part continuing from the first as one block would.
template <typename W, typename Rates>
std::array<std::array<double, 2>, std::size(Rates{}.units)> simulateParts(std::span<const W> words, const Lanes &lanes,
                                                                         size_t split, const std::optional<uint64_t> &escape,
                                                                         Rates rates) {
  constexpr size_t kRates = std::size(Rates{}.units);
  std::array<std::array<double, 2>, kRates> total{};
  NarrowSimulation<W, Rates> simulation(lanes, escape);
  const std::span<const W> parts[2] = {words.first(split), words.subspan(split)};
  for (size_t part = 0; part < 2; ++part) {
    simulation.run(parts[part], rates);
    for (size_t r = 0; r < kRates; ++r) {
      total[r][part] = static_cast<double>(rates.units[r]) / kCostUnitsPerBit;
      rates.units[r] = 0;
    }
  }
  return total;
}

const SimulationTable &simulationTable() {
  static const SimulationTable simulation;
  return simulation;
}

/// With `estimateRateOnly`, words of one or two lanes are simulated at kContextEstimateRate
/// alone (its entry of the result; the other rate's is left 0); wider words at both rates.
template <typename W>
std::vector<std::array<double, 2>> contextCodeBitsOf(std::span<const W> words, unsigned width, size_t split,
                                                     const std::optional<uint64_t> &escape, bool estimateRateOnly) {
  const SimulationTable &simulation = simulationTable();
  const Lanes lanes(std::clamp(width, 1u, kContextMaxWidth), escape.has_value());
  split = std::min(split, words.size());
  static_assert(kContextTriedRates == 2, "the rates' models are walked together, in pairs");
  static_assert(kContextEstimateRate - kContextMinRate == 1, "OneRate<1> below is the estimate's rate");
  if (lanes.count <= 2 && estimateRateOnly) {
    const auto one = simulateParts(words, lanes, split, escape, OneRate<1>{simulation.interleaved.data()});
    std::vector<std::array<double, 2>> total(kContextTriedRates);
    total[kContextEstimateRate - kContextMinRate] = one[0];
    return total;
  }
  if (lanes.count <= 2) {
    const auto both = simulateParts(words, lanes, split, escape, BothRates{simulation.interleaved.data()});
    return {both.begin(), both.end()};
  }
  std::vector<std::array<double, 2>> total(kContextTriedRates);
  uint64_t units[2] = {0, 0};
  auto takeUnits = [&](size_t part) {
    for (unsigned r = 0; r < 2; ++r) {
      total[r][part] = static_cast<double>(units[r]) / kCostUnitsPerBit;
      units[r] = 0;
    }
  };
  thread_local std::vector<std::array<uint16_t, 2>> models;
  models.assign(lanes.models, {kProbInit, kProbInit});
  auto cost = [&, &steps = simulation.step](size_t m, unsigned bit, unsigned) {
    std::array<uint16_t, 2> &p = models[m];
    const SimulatedStep &a = steps[bit][p[0]], &b = steps[bit][p[1]];
    units[0] += a.cost;
    units[1] += b.cost;
    p = {a.next[0], b.next[1]};
  };
  WalkState state;
  auto noRaw = [](unsigned) {};
  walkBits(words.first(split), lanes, escape, cost, noRaw, state);
  takeUnits(0);
  walkBits(words.subspan(split), lanes, escape, cost, noRaw, state);
  takeUnits(1);
  return total;
}

/// The simulation of `words` at both tried rates, with the last lane's costs by level.
template <typename W>
BothRatesByLevel simulateByLevel(std::span<const W> words, unsigned width, const std::optional<uint64_t> &escape) {
  const Lanes lanes(width, escape.has_value());
  BothRatesByLevel rates;
  rates.steps = simulationTable().interleaved.data();
  if (lanes.count <= 2) {
    NarrowSimulation<W, BothRatesByLevel>(lanes, escape).run(words, rates);
    return rates;
  }
  thread_local std::vector<uint32_t> models;
  models.assign(lanes.models, BothRates::kEven);
  WalkState state;
  walkBits(
      words, lanes, escape,
      [&](size_t m, unsigned bit, unsigned at) {
        if (at < kContextMaxRawBits) rates.stepAt(at, models[m], bit);
        else rates.step(models[m], bit);
      },
      [](unsigned) {}, state);
  return rates;
}

template <typename W>
std::vector<ContextCoding> codingsOf(std::span<const W> words, unsigned width, const std::optional<uint64_t> &escape) {
  width = std::clamp(width, 1u, kContextMaxWidth);
  const BothRatesByLevel rates = simulateByLevel(words, width, escape);
  // The words that code their lanes, each of which would store its raw bits.
  const auto laneWords = static_cast<double>(
      escape ? std::count_if(words.begin(), words.end(), [&](W w) { return w != *escape; }) : words.size());
  const unsigned maxRaw = contextMaxRawBits(width);
  // Raw bits pay their count byte, and a byte count per block.
  const uint64_t blocks = (words.size() + kContextBlockWords - 1) / kContextBlockWords;
  std::vector<ContextCoding> codings;
  codings.reserve(kContextTriedRates * (maxRaw + 1));
  for (unsigned r = 0; r < kContextTriedRates; ++r) {
    uint64_t units = rates.units[r];
    for (unsigned raw = 0; raw <= maxRaw; ++raw) {
      if (raw) units -= rates.level[r][raw - 1];
      const double framing = raw ? 8.0 * (1 + 2 * static_cast<double>(blocks)) : 0.0;
      const double bits = static_cast<double>(units) / kCostUnitsPerBit + raw * laneWords + framing;
      codings.push_back(ContextCoding{escape, kContextMinRate + r, raw, bits});
    }
  }
  return codings;
}

} // namespace

unsigned contextMaxRawBits(unsigned width) {
  width = std::clamp(width, 1u, kContextMaxWidth);
  return width > 8 ? kContextMaxRawBits : width - 1;
}

std::vector<ContextCoding> contextCodings(WordsView words, unsigned width, const std::optional<uint64_t> &escape) {
  return words.visit([&](auto w) { return codingsOf(w, width, escape); });
}

ContextCoding chooseContextCoding(std::span<const ContextCoding> codings, double room) {
  assert(!codings.empty());
  double smallest = DBL_MAX;
  for (const ContextCoding &c : codings) smallest = std::min(smallest, c.bits);
  const ContextCoding *best = nullptr;
  for (const ContextCoding &c : codings)
    if (c.bits <= smallest * (1 + room) &&
        (!best || c.rawBits > best->rawBits || (c.rawBits == best->rawBits && c.bits < best->bits)))
      best = &c;
  return *best;
}

std::vector<std::array<double, 2>> contextCodeBits(WordsView words, unsigned width, size_t split,
                                                   const std::optional<uint64_t> &escape) {
  return words.visit([&](auto w) { return contextCodeBitsOf(w, width, split, escape, false); });
}

std::array<double, 2> contextEstimateBits(WordsView words, unsigned width, size_t split,
                                          const std::optional<uint64_t> &escape) {
  return words.visit([&](auto w) { return contextCodeBitsOf(w, width, split, escape, true); })[kContextEstimateRate -
                                                                                               kContextMinRate];
}

namespace {

template <typename W>
void encodeContextOf(std::span<const W> words, unsigned width, unsigned rate, const std::optional<uint64_t> &escape,
                     Bytes &out, unsigned rawBits) {
  width = std::clamp(width, 1u, kContextMaxWidth);
  rawBits = std::min(rawBits, contextMaxRawBits(width));
  const Lanes lanes(width, escape.has_value(), rawBits);
  rate = std::clamp(rate, kContextMinRate, kContextMaxRate);
  putVarint(out, kContextBlockWords);
  out.push_back(static_cast<uint8_t>(rate | (escape ? kContextEscapeFlag : 0) | (rawBits ? kContextRawFlag : 0)));
  if (escape) putVarint(out, *escape);
  if (rawBits) out.push_back(static_cast<uint8_t>(rawBits));
  thread_local std::vector<uint16_t> models;
  thread_local Bytes block, raw;
  for (uint64_t begin = 0; begin < words.size(); begin += kContextBlockWords) {
    const uint64_t end = std::min<uint64_t>(words.size(), begin + kContextBlockWords);
    models.assign(lanes.models, kProbInit);
    block.clear();
    raw.clear();
    RangeEncoder coder(block);
    RawBitWriter rawOut(raw);
    WalkState state;
    walkBits(
        words.subspan(begin, end - begin), lanes, escape,
        [&](size_t m, unsigned bit, unsigned) { coder.encode(models[m], bit, rate); },
        [&](unsigned bits) { rawOut.put(bits, rawBits); }, state);
    coder.finish();
    rawOut.finish();
    putVarint(out, block.size());
    out.insert(out.end(), block.begin(), block.end());
    if (rawBits) {
      putVarint(out, raw.size());
      out.insert(out.end(), raw.begin(), raw.end());
    }
  }
}

} // namespace

void encodeContext(WordsView words, unsigned width, unsigned rate, const std::optional<uint64_t> &escape, Bytes &out,
                   unsigned rawBits) {
  assert(!escape || width >= 64 || *escape >> width == 0);
  assert(rawBits <= contextMaxRawBits(width));
  return words.visit([&](auto w) { return encodeContextOf(w, width, rate, escape, out, rawBits); });
}

std::optional<uint64_t> contextEscapeCandidate(WordsView words, unsigned width) {
  static_assert(kContextEscapeMinShare > 0.25, "three counters find every word of more than a quarter");
  const uint64_t n = words.size();
  if (n == 0) return std::nullopt;
  uint64_t word = 0, count = 0;
  if (width <= 16) {
    // A table of every word: a few instructions a word.
    const std::optional<WordHistogram> h = histogram(words, width, uint64_t{1} << 16);
    for (size_t i = 0; h && i < h->words.size(); ++i)
      if (h->counts[i] > count) {
        word = h->words[i];
        count = h->counts[i];
      }
  } else {
    // Misra and Gries' frequent items with three counters: a word of more than a quarter of
    // the stream holds one at the end; then the held words are counted exactly.
    std::array<uint64_t, 3> held{}, weight{};
    words.visit([&](auto w) {
      for (const uint64_t x : w) {
        if (x == held[0] && weight[0]) ++weight[0];
        else if (x == held[1] && weight[1]) ++weight[1];
        else if (x == held[2] && weight[2]) ++weight[2];
        else if (!weight[0]) held[0] = x, weight[0] = 1;
        else if (!weight[1]) held[1] = x, weight[1] = 1;
        else if (!weight[2]) held[2] = x, weight[2] = 1;
        else --weight[0], --weight[1], --weight[2];
      }
    });
    std::array<uint64_t, 3> counts{};
    words.visit([&](auto w) {
      for (const uint64_t x : w)
        for (size_t c = 0; c < 3; ++c) counts[c] += weight[c] && x == held[c];
    });
    const size_t best = static_cast<size_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
    word = held[best];
    count = counts[best];
  }
  if (static_cast<double>(count) < kContextEscapeMinShare * static_cast<double>(n)) return std::nullopt;
  return word;
}

std::vector<std::optional<uint64_t>> contextEscapesToTry(WordsView words, unsigned width) {
  std::vector<std::optional<uint64_t>> tried{std::nullopt};
  if (auto candidate = contextEscapeCandidate(words, width)) tried.push_back(candidate);
  return tried;
}

Result<std::unique_ptr<ContextDecoder>> ContextDecoder::create(ByteSpan bytes, unsigned width, uint64_t count) {
  if (width == 0 || width > kContextMaxWidth)
    return Error{fmt::format("context literals hold words of 1 to {} bits", kContextMaxWidth)};
  auto d = std::unique_ptr<ContextDecoder>(new ContextDecoder());
  d->width_ = width;
  d->count_ = count;
  ByteReader in(bytes);
  auto blockWords = in.varint();
  if (!blockWords || *blockWords == 0) return Error{"context literal has an invalid block size"};
  d->blockWords_ = *blockWords;
  auto mode = in.byte();
  if (!mode) return Error{"context literal is truncated"};
  constexpr unsigned kKnown = kContextRateMask | kContextEscapeFlag | kContextRawFlag;
  if ((*mode & ~kKnown) != 0) return Error{fmt::format("context literal has unknown flags 0x{:02x}", *mode & ~kKnown)};
  const unsigned rate = *mode & kContextRateMask;
  if (rate < kContextMinRate || rate > kContextMaxRate)
    return Error{fmt::format("context literal has adaptation rate {}, not {}..{}", rate, kContextMinRate,
                             kContextMaxRate)};
  d->rate_ = rate;
  if (*mode & kContextEscapeFlag) {
    auto escape = in.varint();
    if (!escape) return Error{"context literal is truncated"};
    if (width < 64 && *escape >> width != 0)
      return Error{fmt::format("context literal's escape word {} does not fit in {} bits", *escape, width)};
    d->escape_ = *escape;
  }
  if (*mode & kContextRawFlag) {
    auto raw = in.byte();
    if (!raw) return Error{"context literal is truncated"};
    if (*raw == 0 || *raw > contextMaxRawBits(width))
      return Error{fmt::format("context literal has {} raw low bits; words of {} bits may have 1 to {}", *raw, width,
                               contextMaxRawBits(width))};
    d->rawBits_ = *raw;
  }
  const uint64_t blocks = count / *blockWords + (count % *blockWords != 0);
  // Every block has at least its size varint and the coder's four starting bytes.
  if (blocks > in.remaining() / 5) return Error{"context literal is truncated"};
  d->blocks_.reserve(blocks);
  for (uint64_t b = 0; b < blocks; ++b) {
    auto size = in.varint();
    const uint8_t *block = size ? in.take(*size) : nullptr;
    if (!block) return Error{"context literal is truncated"};
    ByteSpan raw;
    if (d->rawBits_) {
      auto rawSize = in.varint();
      const uint8_t *rawBytes = rawSize ? in.take(*rawSize) : nullptr;
      if (!rawBytes) return Error{"context literal is truncated"};
      raw = ByteSpan(rawBytes, static_cast<size_t>(*rawSize));
    }
    d->blocks_.emplace_back(ByteSpan(block, static_cast<size_t>(*size)), raw);
  }
  if (in.remaining() != 0) return Error{"context literal has trailing bytes"};
  return d;
}

uint64_t ContextDecoder::blockLength(size_t b) const { return std::min(blockWords_, count_ - b * blockWords_); }

namespace {

/// How a walk down a bit tree decodes each level's bit: while learning, by decodeBranch,
/// counting in surprises[k] the bits of level k (0 the top) that their model thought less
/// likely; after, by decodeSelect where bit k of `selects` is set, else by decodeBranch.
template <bool Learning> struct LevelModes;
template <> struct LevelModes<true> {
  uint32_t *surprises;
};
template <> struct LevelModes<false> {
  unsigned selects;
};

/// A walk of `levels` bits down a bit tree from its root, both children's models loaded while a
/// bit decodes (Children: whether the last level's exist in the tree). Levels is the count when
/// known (0: `levels`).
template <unsigned Levels, bool Children, bool Learning>
[[gnu::always_inline]] inline unsigned walkTree(RangeDecoder &coder, uint16_t *tree, unsigned rate, unsigned levels,
                                                LevelModes<Learning> modes) {
  if constexpr (Levels != 0) levels = Levels;
  unsigned node = 1;
  uint32_t p = tree[1];
#pragma GCC unroll 8
  for (unsigned k = 0; k < levels; ++k) {
    uint32_t p0 = 0, p1 = 0;
    if (Children || k + 1 < levels) {
      p0 = tree[2 * node];
      p1 = tree[2 * node + 1];
    }
    unsigned bit;
    if constexpr (Learning) {
      bit = coder.decodeBranch(p, tree[node], rate, p0, p1);
      modes.surprises[k] += bit ^ (p < kProbInit);
    } else {
      // The same choice for every word of the stretch: the branches on it are predicted.
      bit = (modes.selects >> k) & 1 ? coder.decodeSelect(p, tree[node], rate, p0, p1)
                                     : coder.decodeBranch(p, tree[node], rate, p0, p1);
    }
    node = node * 2 + bit;
    p = p0;
  }
  return node - (1u << levels);
}

/// The bits of the last lane: `coded` of them through the coder's tree (Raw: a count for the
/// literal, else Bits, unrolled), then the rest from the raw bits.
template <unsigned Bits, bool Raw, bool Learning>
[[gnu::always_inline]] inline unsigned decodeLastLane(RangeDecoder &coder, uint16_t *tree, unsigned rate,
                                                      unsigned coded, RawBitReader &raw, LevelModes<Learning> modes) {
  if constexpr (Raw) {
    // coded < Bits: the last coded level's children are in the tree.
    const unsigned value = walkTree<0, true>(coder, tree, rate, coded, modes);
    const unsigned rawBits = Bits - coded;
    return (value << rawBits) | raw.read(rawBits);
  } else {
    return walkTree<Bits, false>(coder, tree, rate, Bits, modes);
  }
}

/// What a word's escape flag said: the word is the escape word, or its lanes follow; or a run
/// of escape words reached the end of the stretch decoded.
enum class Flagged { Escape, Word, End };

/// The escape flags' models, chosen by the flags of the two words before.
struct EscapeFlags {
  std::array<uint16_t, kFlagContexts> models;
  WalkState state;
  EscapeFlags() { models.fill(kProbInit); }
  /// Decodes word i's flag (i < end) and writes an escape word. After two escape words, a run
  /// of them is decoded at once, to the flag that ends it or to `end`, and i moves past it.
  template <typename T>
  [[gnu::always_inline]] Flagged decode(RangeDecoder &coder, unsigned rate, T *out, uint64_t &i, uint64_t end,
                                        T escape) {
    unsigned flag;
    if (state.flags == kFlagContexts - 1) {
      const uint64_t ones = coder.decodeOnes(models[kFlagContexts - 1], rate, end - i);
      std::fill_n(out + i, ones, escape);
      i += ones;
      if (i == end) return Flagged::End;
      flag = 0;
    } else {
      flag = coder.decode(models[state.flags], rate);
    }
    state.pushFlag(flag);
    if (!flag) return Flagged::Word;
    out[i] = escape;
    return Flagged::Escape;
  }
};

/// The first words of a block, decoded by decodeBranch, choose each level's mode for the rest:
/// decodeSelect where more than kSelectFrom of their bits surprised their models. (The corpus's
/// streams decoded 1.2-1.5x faster so for any share from 0.02 to 0.1, against branches alone;
/// decodeSelect alone was as slow as branches on exponent bytes, whose top levels are skewed.)
constexpr uint64_t kLearningWords = 256;
constexpr double kSelectFrom = 0.05;

/// Decodes `length` words of one or two lanes, the top one of TopBits bits, the other (if any)
/// of 8: with the lanes' widths constant, each lane's bits unroll into straight-line steps.
/// With Escape, each word's flag comes first, and a flagged word is `escape`. With Raw, the
/// last lane codes only its top `coded` bits. The words learning the levels' modes and the
/// rest are two loops: the rest's steps test neither the phase nor its counters.
template <typename T, unsigned LaneCount, unsigned TopBits, bool Escape, bool Raw>
void decodeNarrowWords(RangeDecoder &blockCoder, RawBitReader &blockRaw, BlockModels &models, unsigned rate,
                       unsigned coded, uint64_t length, T *out, T escape) {
  // Copies whose address does not escape: their state stays in registers.
  RangeDecoder coder = blockCoder;
  RawBitReader raw = blockRaw;
  LaneTrees topTrees = models.lane(0), lowTrees = models.lane(LaneCount - 1);
  unsigned previousTop = 0;
  EscapeFlags flags;
  uint64_t i = 0, walked = 0;
  const auto run = [&]<bool Learning>(uint64_t end, LevelModes<Learning> topModes, LevelModes<Learning> lowModes)
                       [[gnu::always_inline]] {
    for (; i < end; ++i) {
      if constexpr (Escape) {
        const Flagged flagged = flags.decode(coder, rate, out, i, end, escape);
        if (flagged == Flagged::End) break;
        if (flagged == Flagged::Escape) continue;
      }
      if constexpr (Learning) ++walked;
      uint16_t *const tree = topTrees.template tree<TopBits>(previousTop);
      if constexpr (LaneCount == 1) {
        const unsigned value = decodeLastLane<TopBits, Raw>(coder, tree, rate, coded, raw, topModes);
        previousTop = value;
        out[i] = static_cast<T>(value);
      } else {
        const unsigned value = walkTree<TopBits, false>(coder, tree, rate, TopBits, topModes);
        previousTop = value;
        const unsigned lowValue =
            decodeLastLane<8, Raw>(coder, lowTrees.template tree<8>(value), rate, coded, raw, lowModes);
        out[i] = static_cast<T>((value << 8) | lowValue);
      }
    }
  };
  // Each lane's levels' surprises over the `walked` words learning (escape words walk no tree).
  std::array<uint32_t, 16> surprises{};
  const uint64_t learning = std::min(length, kLearningWords);
  run.template operator()<true>(learning, {surprises.data()}, {surprises.data() + 8});
  const auto chosen = [&](const uint32_t *counts) {
    unsigned selects = 0;
    for (unsigned k = 0; k < 8; ++k)
      if (counts[k] > kSelectFrom * static_cast<double>(walked)) selects |= 1u << k;
    return selects;
  };
  run.template operator()<false>(length, {chosen(surprises.data())}, {chosen(surprises.data() + 8)});
  blockCoder = coder;
  blockRaw = raw;
}

template <typename T, unsigned LaneCount, bool Escape, bool Raw>
void decodeNarrowWords(RangeDecoder &coder, RawBitReader &raw, BlockModels &models, const Lanes &lanes, unsigned rate,
                       uint64_t length, T *out, T escape) {
  const unsigned coded = lanes.bits[lanes.count - 1] - lanes.raw;
  switch (lanes.bits[0]) {
#define BREVIS_TOP_BITS(b)                                                                                               \
  case b: return decodeNarrowWords<T, LaneCount, b, Escape, Raw>(coder, raw, models, rate, coded, length, out, escape);
    BREVIS_TOP_BITS(1) BREVIS_TOP_BITS(2) BREVIS_TOP_BITS(3) BREVIS_TOP_BITS(4)
    BREVIS_TOP_BITS(5) BREVIS_TOP_BITS(6) BREVIS_TOP_BITS(7) BREVIS_TOP_BITS(8)
#undef BREVIS_TOP_BITS
  default: assert(false && "a lane holds 1 to 8 bits");
  }
}

template <typename T, unsigned LaneCount>
void decodeNarrowWords(RangeDecoder &coder, RawBitReader &raw, BlockModels &models, const Lanes &lanes, unsigned rate,
                       const std::optional<uint64_t> &escape, uint64_t length, T *out) {
  const auto e = static_cast<T>(escape.value_or(0));
  if (escape) {
    if (lanes.raw) decodeNarrowWords<T, LaneCount, true, true>(coder, raw, models, lanes, rate, length, out, e);
    else decodeNarrowWords<T, LaneCount, true, false>(coder, raw, models, lanes, rate, length, out, e);
  } else {
    if (lanes.raw) decodeNarrowWords<T, LaneCount, false, true>(coder, raw, models, lanes, rate, length, out, e);
    else decodeNarrowWords<T, LaneCount, false, false>(coder, raw, models, lanes, rate, length, out, e);
  }
}

/// Any number of lanes (words of 17 to 32 bits).
template <typename T>
void decodeWideWords(RangeDecoder &coder, RawBitReader &raw, BlockModels &models, const Lanes &lanes, unsigned rate,
                     const std::optional<uint64_t> &escape, uint64_t length, T *out) {
  unsigned previousTop = 0;
  EscapeFlags flags;
  for (uint64_t i = 0; i < length; ++i) {
    if (escape) {
      const Flagged flagged = flags.decode(coder, rate, out, i, length, static_cast<T>(*escape));
      if (flagged == Flagged::End) break;
      if (flagged == Flagged::Escape) continue;
    }
    unsigned context = previousTop;
    uint64_t word = 0;
    for (unsigned l = 0; l < lanes.count; ++l) {
      const unsigned bits = lanes.bits[l];
      const unsigned rawBits = l + 1 == lanes.count ? lanes.raw : 0;
      uint16_t *tree = models.tree(l, context);
      unsigned node = 1;
      for (unsigned k = 0; k < bits - rawBits; ++k) node = node * 2 + coder.decode(tree[node], rate);
      unsigned value = node - (1u << (bits - rawBits));
      if (rawBits) value = (value << rawBits) | raw.read(rawBits);
      word = (word << bits) | value;
      if (l == 0) previousTop = value;
      context = value;
    }
    out[i] = static_cast<T>(word);
  }
}

} // namespace

template <typename T> Result<void> ContextDecoder::decodeBlock(size_t b, T *out) const {
  const Lanes lanes(width_, false, rawBits_);
  BlockModels models(lanes);
  const auto [bytes, rawBytes] = blocks_[b];
  RangeDecoder coder(bytes.data(), bytes.data() + bytes.size());
  RawBitReader raw(rawBytes.data(), rawBytes.data() + rawBytes.size());
  const uint64_t length = blockLength(b);
  if (lanes.count == 1) decodeNarrowWords<T, 1>(coder, raw, models, lanes, rate_, escape_, length, out);
  else if (lanes.count == 2) decodeNarrowWords<T, 2>(coder, raw, models, lanes, rate_, escape_, length, out);
  else decodeWideWords(coder, raw, models, lanes, rate_, escape_, length, out);
  // A well-formed block holds every byte the decoder reads (the encoder flushes four more than
  // the last bit needs); past its end, the words decoded are not the block's.
  if (coder.overran()) return Error{fmt::format("context block {} is corrupt or truncated: its coder reads past its end", b)};
  if (rawBits_ && !raw.exact())
    return Error{fmt::format("context block {} is corrupt or truncated: its raw bits do not match its words", b)};
  return {};
}

template Result<void> ContextDecoder::decodeBlock(size_t, uint8_t *) const;
template Result<void> ContextDecoder::decodeBlock(size_t, uint16_t *) const;
template Result<void> ContextDecoder::decodeBlock(size_t, uint32_t *) const;
template Result<void> ContextDecoder::decodeBlock(size_t, uint64_t *) const;

} // namespace brevis
