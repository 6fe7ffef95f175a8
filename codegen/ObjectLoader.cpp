#include "codegen/ObjectLoader.h"

#include <fmt/format.h>

#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

namespace brevis::jit {

namespace {

/// The functions generated code may call: what LLVM turns its copies and fills into.
struct External {
  const char *name;
  void *address;
};
const External kExternals[] = {
    {"memcpy", reinterpret_cast<void *>(&::memcpy)},
    {"memset", reinterpret_cast<void *>(&::memset)},
};

/// A trampoline: a jump to an absolute address (`jmp *0(%rip)` and the address), how a PLT32
/// call reaches a function outside the mapping, which may be further than 2 GiB away.
constexpr size_t kTrampolineBytes = 16;

/// Larger objects, or section alignments, are not what the emitter makes (objects are kilobytes).
constexpr uint64_t kMaxLoadedBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxAlignment = 4096;

template <typename T> std::optional<T> readAt(ByteSpan bytes, uint64_t offset) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

/// The memory holds three groups, each starting on a page and protected as a whole: code (each
/// object's trampolines after its code), constants, writable data. Each object has a part of each.
enum Group { kCode, kConstants, kData, kGroups };

Error refused(std::string_view why) { return Error{fmt::format("cached code not loadable: {}", why)}; }

uint64_t alignUp(uint64_t v, uint64_t align) { return (v + align - 1) & ~(align - 1); }

/// One object, parsed and checked: where each allocated section goes within the object's part
/// of its group, and each external symbol's trampoline.
class ObjectPlan {
public:
  static Result<ObjectPlan> make(ByteSpan object);

  uint64_t groupSize[kGroups] = {0, 0, 0};
  /// The largest alignment of a section in each group's part (at most a page).
  uint64_t groupAlign[kGroups] = {kTrampolineBytes, 1, 1};
  /// Where the object's part of each group starts in the memory, set by the caller.
  uint8_t *groupBase[kGroups] = {nullptr, nullptr, nullptr};

  /// Copies, relocates and writes trampolines at groupBase; adds the global functions to `functions`.
  Result<void> place(std::unordered_map<std::string, void *> &functions) const;

private:
  ByteSpan object_;
  std::vector<Elf64_Shdr> sections_;
  std::vector<int> groupOf_;      ///< per section: its group, or -1 if not loaded
  std::vector<uint64_t> offset_;  ///< per section: its offset within its group's part
  ByteSpan symbols_, names_;
  std::vector<void *> external_;  ///< per symbol: the external's address, if undefined
  std::vector<uint64_t> trampoline_; ///< per symbol: its trampoline's offset in the code part

  size_t symbolCount() const { return symbols_.size() / sizeof(Elf64_Sym); }
  Elf64_Sym symbol(size_t i) const {
    Elf64_Sym sym;
    std::memcpy(&sym, symbols_.data() + i * sizeof(Elf64_Sym), sizeof sym);
    return sym;
  }
  std::optional<std::string_view> nameOf(const Elf64_Sym &sym) const {
    if (sym.st_name >= names_.size()) return std::nullopt;
    const auto *begin = reinterpret_cast<const char *>(names_.data()) + sym.st_name;
    const void *end = std::memchr(begin, 0, names_.size() - sym.st_name);
    if (!end) return std::nullopt;
    return std::string_view(begin, static_cast<const char *>(end) - begin);
  }
  std::optional<ByteSpan> contents(const Elf64_Shdr &s) const {
    if (s.sh_type == SHT_NOBITS) return ByteSpan();
    if (s.sh_offset > object_.size() || object_.size() - s.sh_offset < s.sh_size) return std::nullopt;
    return object_.subspan(s.sh_offset, s.sh_size);
  }
  uint8_t *sectionAddress(size_t i) const { return groupBase[groupOf_[i]] + offset_[i]; }
  /// A symbol's address: in a placed section, or for an external its trampoline (calls) or itself.
  std::optional<uint64_t> symbolAddress(size_t i, bool call) const;
};

Result<ObjectPlan> ObjectPlan::make(ByteSpan object) {
  ObjectPlan plan;
  plan.object_ = object;
  const auto header = readAt<Elf64_Ehdr>(object, 0);
  if (!header || std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 || header->e_ident[EI_CLASS] != ELFCLASS64 ||
      header->e_ident[EI_DATA] != ELFDATA2LSB || header->e_type != ET_REL || header->e_machine != EM_X86_64)
    return refused("not an x86-64 ELF relocatable object");
  if (header->e_shentsize != sizeof(Elf64_Shdr) || header->e_shnum == 0 || header->e_shoff > object.size() ||
      (object.size() - header->e_shoff) / sizeof(Elf64_Shdr) < header->e_shnum)
    return refused("its section headers lie outside it");
  const unsigned count = header->e_shnum;
  plan.sections_.resize(count);
  std::memcpy(plan.sections_.data(), object.data() + header->e_shoff, count * sizeof(Elf64_Shdr));

  // The symbol table (one) and its names.
  unsigned symtab = count;
  for (unsigned i = 0; i < count; ++i)
    if (plan.sections_[i].sh_type == SHT_SYMTAB) {
      if (symtab != count) return refused("it has two symbol tables");
      symtab = i;
    }
  if (symtab == count || plan.sections_[symtab].sh_entsize != sizeof(Elf64_Sym) ||
      plan.sections_[symtab].sh_link >= count)
    return refused("no symbol table");
  const auto symbols = plan.contents(plan.sections_[symtab]);
  const auto names = plan.contents(plan.sections_[plan.sections_[symtab].sh_link]);
  if (!symbols || !names) return refused("its symbol table lies outside it");
  plan.symbols_ = *symbols;
  plan.names_ = *names;

  // Each allocated section's place within its group's part.
  plan.groupOf_.assign(count, -1);
  plan.offset_.assign(count, 0);
  for (unsigned i = 0; i < count; ++i) {
    const Elf64_Shdr &s = plan.sections_[i];
    if (!(s.sh_flags & SHF_ALLOC)) continue;
    if (s.sh_type != SHT_PROGBITS && s.sh_type != SHT_NOBITS)
      return refused(fmt::format("an allocated section of type {}", s.sh_type));
    if (!plan.contents(s)) return refused("a section lies outside it");
    const uint64_t align = std::max<uint64_t>(s.sh_addralign, 1);
    if (align > kMaxAlignment || (align & (align - 1)) != 0) return refused("a section's alignment");
    if (s.sh_size > kMaxLoadedBytes) return refused("a section too large");
    const int g = (s.sh_flags & SHF_EXECINSTR) ? kCode : (s.sh_flags & SHF_WRITE) ? kData : kConstants;
    plan.groupSize[g] = alignUp(plan.groupSize[g], align);
    plan.groupAlign[g] = std::max(plan.groupAlign[g], align);
    plan.offset_[i] = plan.groupSize[g];
    plan.groupOf_[i] = g;
    plan.groupSize[g] += s.sh_size;
    if (plan.groupSize[g] > kMaxLoadedBytes) return refused("sections too large");
  }

  // Undefined symbols: each an allowed external, given a trampoline after the code.
  const size_t symbolCount = plan.symbolCount();
  plan.external_.assign(symbolCount, nullptr);
  plan.trampoline_.assign(symbolCount, 0);
  plan.groupSize[kCode] = alignUp(plan.groupSize[kCode], kTrampolineBytes);
  for (size_t i = 1; i < symbolCount; ++i) {
    const Elf64_Sym sym = plan.symbol(i);
    if (sym.st_shndx != SHN_UNDEF) continue;
    const auto name = plan.nameOf(sym);
    if (!name) return refused("a symbol's name lies outside it");
    for (const External &e : kExternals)
      if (*name == e.name) plan.external_[i] = e.address;
    if (!plan.external_[i]) return refused(fmt::format("it calls {}", *name));
    plan.trampoline_[i] = plan.groupSize[kCode];
    plan.groupSize[kCode] += kTrampolineBytes;
  }
  for (const Elf64_Shdr &s : plan.sections_) {
    if (s.sh_type == SHT_REL) return refused("relocations without addends");
    if (s.sh_type == SHT_RELA && (s.sh_link != symtab ||
                                  s.sh_entsize != sizeof(Elf64_Rela) || !plan.contents(s)))
      return refused("a relocation section");
  }
  return plan;
}

std::optional<uint64_t> ObjectPlan::symbolAddress(size_t i, bool call) const {
  const Elf64_Sym sym = symbol(i);
  if (sym.st_shndx == SHN_UNDEF) {
    if (!external_[i]) return std::nullopt;
    return call ? reinterpret_cast<uint64_t>(groupBase[kCode] + trampoline_[i])
                : reinterpret_cast<uint64_t>(external_[i]);
  }
  if (sym.st_shndx == SHN_ABS) return sym.st_value;
  if (sym.st_shndx >= sections_.size() || groupOf_[sym.st_shndx] < 0 || sym.st_value > sections_[sym.st_shndx].sh_size)
    return std::nullopt;
  return reinterpret_cast<uint64_t>(sectionAddress(sym.st_shndx)) + sym.st_value;
}

Result<void> ObjectPlan::place(std::unordered_map<std::string, void *> &functions) const {
  for (size_t i = 0; i < sections_.size(); ++i)
    if (groupOf_[i] >= 0 && sections_[i].sh_type == SHT_PROGBITS)
      std::memcpy(sectionAddress(i), object_.data() + sections_[i].sh_offset, sections_[i].sh_size);
  for (size_t i = 1; i < symbolCount(); ++i) {
    if (!external_[i]) continue;
    uint8_t *trampoline = groupBase[kCode] + trampoline_[i];
    const uint8_t jump[6] = {0xff, 0x25, 0, 0, 0, 0}; // jmp *0(%rip): the address follows
    std::memcpy(trampoline, jump, sizeof jump);
    const auto address = reinterpret_cast<uint64_t>(external_[i]);
    std::memcpy(trampoline + sizeof jump, &address, sizeof address);
  }

  for (const Elf64_Shdr &s : sections_) {
    if (s.sh_type != SHT_RELA || s.sh_info >= sections_.size() || groupOf_[s.sh_info] < 0)
      continue; // relocates what is not loaded
    const ByteSpan relocations = *contents(s);
    const Elf64_Shdr &target = sections_[s.sh_info];
    uint8_t *const targetAddress = sectionAddress(s.sh_info);
    for (size_t r = 0; r < relocations.size() / sizeof(Elf64_Rela); ++r) {
      Elf64_Rela rela;
      std::memcpy(&rela, relocations.data() + r * sizeof rela, sizeof rela);
      const auto type = static_cast<unsigned>(ELF64_R_TYPE(rela.r_info));
      const size_t symbol = ELF64_R_SYM(rela.r_info);
      const size_t width = type == R_X86_64_64 ? 8 : 4;
      if (target.sh_type == SHT_NOBITS || rela.r_offset > target.sh_size || target.sh_size - rela.r_offset < width)
        return refused("a relocation outside its section");
      if (symbol == 0 || symbol >= symbolCount()) return refused("a relocation's symbol");
      uint8_t *const at = targetAddress + rela.r_offset;
      const auto address = symbolAddress(symbol, type == R_X86_64_PLT32);
      if (!address) return refused("a relocation's symbol");
      const uint64_t value = *address + static_cast<uint64_t>(rela.r_addend);
      switch (type) {
      case R_X86_64_64: std::memcpy(at, &value, 8); break;
      case R_X86_64_PC32:
      case R_X86_64_PLT32: {
        const auto relative = static_cast<int64_t>(value - reinterpret_cast<uint64_t>(at));
        if (relative < std::numeric_limits<int32_t>::min() || relative > std::numeric_limits<int32_t>::max())
          return refused("a relative relocation out of reach");
        const auto narrow = static_cast<int32_t>(relative);
        std::memcpy(at, &narrow, 4);
        break;
      }
      default: return refused(fmt::format("relocation type {}", type));
      }
    }
  }

  std::vector<std::pair<std::string, void *>> found;
  for (size_t i = 1; i < symbolCount(); ++i) {
    const Elf64_Sym sym = symbol(i);
    if (ELF64_ST_BIND(sym.st_info) != STB_GLOBAL || ELF64_ST_TYPE(sym.st_info) != STT_FUNC ||
        sym.st_shndx == SHN_UNDEF || sym.st_shndx >= sections_.size() || groupOf_[sym.st_shndx] != kCode)
      continue;
    const auto name = nameOf(sym);
    const auto address = symbolAddress(i, false);
    if (!name || !address || sym.st_value >= sections_[sym.st_shndx].sh_size) return refused("a function's symbol");
    found.emplace_back(std::string(*name), reinterpret_cast<void *>(*address));
  }
  for (auto &[name, address] : found) functions.emplace(std::move(name), address);
  return {};
}

} // namespace

LoadedCode::~LoadedCode() {
  if (memory_) ::munmap(memory_, size_);
}

std::unique_ptr<LoadedCode> LoadedCode::load(std::span<const ByteSpan> objects, std::vector<Result<void>> &outcomes) {
  outcomes.assign(objects.size(), Result<void>());
  std::vector<std::optional<ObjectPlan>> plans(objects.size());
  uint64_t groupSize[kGroups] = {0, 0, 0};
  std::vector<std::array<uint64_t, kGroups>> at(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    auto plan = ObjectPlan::make(objects[i]);
    if (!plan) {
      outcomes[i] = plan.error();
      continue;
    }
    uint64_t total = 0;
    for (int g = 0; g < kGroups; ++g) {
      at[i][g] = alignUp(groupSize[g], plan->groupAlign[g]); // groups start on a page
      total += at[i][g] + plan->groupSize[g];
    }
    if (total > kMaxLoadedBytes) {
      outcomes[i] = refused("too much code at once");
      continue;
    }
    for (int g = 0; g < kGroups; ++g) groupSize[g] = at[i][g] + plan->groupSize[g];
    plans[i] = std::move(*plan);
  }

  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t groupStart[kGroups];
  uint64_t total = 0;
  for (int g = 0; g < kGroups; ++g) {
    groupStart[g] = total;
    total += alignUp(groupSize[g], page);
  }
  if (total == 0) {
    for (size_t i = 0; i < objects.size(); ++i)
      if (plans[i]) outcomes[i] = refused("it holds no code");
    return nullptr;
  }
  void *memory = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    for (size_t i = 0; i < objects.size(); ++i)
      if (plans[i]) outcomes[i] = refused("no memory for it");
    return nullptr;
  }
  std::unique_ptr<LoadedCode> loaded(new LoadedCode());
  loaded->memory_ = memory;
  loaded->size_ = total;
  auto *base = static_cast<uint8_t *>(memory);
  bool any = false;
  for (size_t i = 0; i < objects.size(); ++i) {
    if (!plans[i]) continue;
    for (int g = 0; g < kGroups; ++g) plans[i]->groupBase[g] = base + groupStart[g] + at[i][g];
    outcomes[i] = plans[i]->place(loaded->functions_);
    any = any || outcomes[i];
  }
  const int protection[kGroups] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
  for (int g = 0; g < kGroups; ++g)
    if (groupSize[g] && ::mprotect(base + groupStart[g], alignUp(groupSize[g], page), protection[g]) != 0) {
      for (size_t i = 0; i < objects.size(); ++i)
        if (outcomes[i]) outcomes[i] = refused("its memory cannot be made executable");
      return nullptr;
    }
  if (!any) return nullptr;
  return loaded;
}

Result<std::unique_ptr<LoadedCode>> LoadedCode::load(ByteSpan object) {
  std::vector<Result<void>> outcomes;
  auto loaded = load(std::span(&object, 1), outcomes);
  if (!outcomes[0]) return outcomes[0].error();
  return loaded;
}

void *LoadedCode::function(const std::string &name) const {
  const auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second;
}

} // namespace brevis::jit
