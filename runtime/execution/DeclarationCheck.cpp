#include "runtime/execution/DeclarationCheck.h"

#include "lang/Printer.h"
#include "runtime/containers/Safetensors.h"

#include <fmt/format.h>

#include <unordered_map>

namespace brevis {

namespace {

std::string rangeText(uint64_t begin, uint64_t size) { return fmt::format("@{}+{}", begin, size); }

std::string shapeText(const std::vector<uint64_t> &shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

} // namespace

const Region *headerRegion(const Checkpoint &c) {
  for (const Region &r : c.regions)
    if (r.kind == RegionKind::Header) return &r;
  return nullptr;
}

std::vector<Error> checkDeclarations(const Checkpoint &c, ByteSpan header) {
  const Region *h = headerRegion(c);
  if (!h) return {};
  auto layout = parseSafetensorsHeader(header, c.source.size);
  if (!layout) return {Error{"the header this program rebuilds is not a safetensors header: " + layout.error().message, h->loc}};
  std::vector<Error> errors;
  if (h->bytes.offset != 0 || h->bytes.size != layout->headerSize)
    errors.push_back(Error{fmt::format("the header region is declared at {}, but the header it rebuilds is {}",
                                       rangeText(h->bytes.offset, h->bytes.size), rangeText(0, layout->headerSize)),
                           h->loc});
  std::unordered_map<std::string_view, const TensorEntry *> byName;
  std::unordered_map<uint64_t, const TensorEntry *> byBegin; // non-empty tensors: one per offset
  for (const TensorEntry &t : layout->tensors) {
    byName.emplace(t.name, &t);
    if (t.end > t.begin) byBegin.emplace(t.begin, &t);
  }
  for (const TensorEntry &t : layout->opaque) byName.emplace(t.name, &t);
  auto isOpaque = [&](const TensorEntry *t) {
    return t >= layout->opaque.data() && t < layout->opaque.data() + layout->opaque.size();
  };
  for (const Region &r : c.regions) {
    if (r.kind != RegionKind::Tensor) continue;
    const std::string name = quoteString(r.name);
    auto found = byName.find(r.name);
    if (found == byName.end()) {
      auto at = byBegin.find(r.bytes.offset);
      errors.push_back(Error{at != byBegin.end()
                                 ? fmt::format("the header has no tensor {}; the tensor at {} is {}", name,
                                               rangeText(r.bytes.offset, r.bytes.size), quoteString(at->second->name))
                                 : fmt::format("the header has no tensor {}", name),
                             r.loc});
      continue;
    }
    const TensorEntry &t = *found->second;
    if (isOpaque(&t)) {
      errors.push_back(Error{fmt::format("tensor {} has a dtype in the header that programs have no words for; its "
                                         "bytes are a `bytes` region",
                                         name),
                             r.loc});
      continue;
    }
    if (t.dtype != r.dtype)
      errors.push_back(Error{fmt::format("tensor {} is declared {}, but the header says {}", name,
                                         dtypeInfo(r.dtype).bdslName, dtypeInfo(t.dtype).bdslName),
                             r.loc});
    if (t.shape != r.shape)
      errors.push_back(Error{fmt::format("tensor {} is declared with shape {}, but the header says {}", name,
                                         shapeText(r.shape), shapeText(t.shape)),
                             r.loc});
    if (t.begin != r.bytes.offset || t.end - t.begin != r.bytes.size)
      errors.push_back(Error{fmt::format("tensor {} is declared at {}, but the header places it at {}", name,
                                         rangeText(r.bytes.offset, r.bytes.size), rangeText(t.begin, t.end - t.begin)),
                             r.loc});
  }
  return errors;
}

} // namespace brevis
