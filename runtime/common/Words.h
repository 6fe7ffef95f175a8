#pragma once
// A stream of words as the encoders and the synthesizer read it: held in the narrowest
// unsigned container its words need (a BF16 tensor as 16-bit words, an exponent field as bytes),
// so that a pass over a tensor reads its own size and not four or eight times that. The code
// that reads every word dispatches once on the container (visit) and loops over a plain span;
// operator[] is for the few words a check looks at.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <variant>
#include <vector>

namespace brevis {

template <typename T>
concept WordContainer = std::is_same_v<T, uint8_t> || std::is_same_v<T, uint16_t> || std::is_same_v<T, uint32_t> ||
                        std::is_same_v<T, uint64_t>;

/// A read-only view of words in a container of 1, 2, 4 or 8 bytes each; cheap to copy.
class WordsView {
public:
  WordsView() = default;
  template <WordContainer W> WordsView(std::span<const W> words) : data_(words.data()), size_(words.size()), bytes_(sizeof(W)) {}
  template <WordContainer W> WordsView(std::span<W> words) : WordsView(std::span<const W>(words)) {}
  template <WordContainer W> WordsView(const std::vector<W> &words) : WordsView(std::span<const W>(words)) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Bytes per word of the container.
  unsigned containerBytes() const { return bytes_; }

  uint64_t operator[](size_t i) const {
    switch (bytes_) {
    case 1: return static_cast<const uint8_t *>(data_)[i];
    case 2: return static_cast<const uint16_t *>(data_)[i];
    case 4: return static_cast<const uint32_t *>(data_)[i];
    default: return static_cast<const uint64_t *>(data_)[i];
    }
  }

  WordsView subspan(size_t offset, size_t count = std::dynamic_extent) const {
    WordsView v = *this;
    v.data_ = static_cast<const uint8_t *>(data_) + offset * bytes_;
    v.size_ = count == std::dynamic_extent ? size_ - offset : count;
    return v;
  }
  WordsView first(size_t count) const { return subspan(0, count); }

  /// f(std::span<const W>) for the container W the words are held in.
  template <typename F> decltype(auto) visit(F &&f) const {
    switch (bytes_) {
    case 1: return f(std::span<const uint8_t>(static_cast<const uint8_t *>(data_), size_));
    case 2: return f(std::span<const uint16_t>(static_cast<const uint16_t *>(data_), size_));
    case 4: return f(std::span<const uint32_t>(static_cast<const uint32_t *>(data_), size_));
    default: return f(std::span<const uint64_t>(static_cast<const uint64_t *>(data_), size_));
    }
  }

  /// The words widened to 64 bits (for code that builds new streams from them).
  std::vector<uint64_t> widened() const {
    return visit([](auto words) { return std::vector<uint64_t>(words.begin(), words.end()); });
  }

private:
  const void *data_ = nullptr;
  size_t size_ = 0;
  unsigned bytes_ = 8;
};

/// Words that own their storage, in the container a width calls for.
class WordBuffer {
public:
  WordBuffer() = default;
  template <WordContainer W> explicit WordBuffer(std::vector<W> words) : words_(std::move(words)) {}

  WordsView view() const {
    return std::visit([](const auto &v) { return WordsView(v); }, words_);
  }
  size_t size() const { return view().size(); }

private:
  std::variant<std::vector<uint8_t>, std::vector<uint16_t>, std::vector<uint32_t>, std::vector<uint64_t>> words_;
};

/// The little-endian words of `wordBytes` bytes each in `bytes` (trailing bytes that make no
/// whole word are ignored), without copying where the bytes are aligned for their container
/// (a tensor in a loaded checkpoint, as a rule): `storage` holds a copy where they are not, or
/// where the word size is not a container's. The view lives as long as `bytes` and `storage`.
inline WordsView viewWords(std::span<const uint8_t> bytes, unsigned wordBytes, WordBuffer &storage) {
  const size_t n = bytes.size() / wordBytes;
  auto copy = [&]<typename W>(W) {
    std::vector<W> words(n);
    if (wordBytes == sizeof(W)) {
      if (n) std::memcpy(words.data(), bytes.data(), n * sizeof(W)); // little-endian host
    } else {
      for (size_t i = 0; i < n; ++i) {
        W w = 0;
        std::memcpy(&w, bytes.data() + i * wordBytes, wordBytes);
        words[i] = w;
      }
    }
    storage = WordBuffer(std::move(words));
    return storage.view();
  };
  auto direct = [&]<typename W>(W) -> WordsView {
    if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(W) != 0) return copy(W{});
    return WordsView(std::span<const W>(reinterpret_cast<const W *>(bytes.data()), n));
  };
  switch (wordBytes) {
  case 1: return direct(uint8_t{});
  case 2: return direct(uint16_t{});
  case 4: return direct(uint32_t{});
  case 8: return direct(uint64_t{});
  default: return wordBytes < 8 ? copy(uint64_t{}) : WordsView{};
  }
}

} // namespace brevis
