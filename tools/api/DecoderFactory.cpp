#include "tools/api/DecoderFactory.h"

#include "codegen/CachedCodeDecoder.h"
#include "codegen/JitDecoder.h"
#include "codegen/JitModule.h"
#include "codegen/ShapeCodeCache.h"
#include "runtime/execution/Interpreter.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace brevis {

namespace {

namespace fs = std::filesystem;

/// The file $BREVIS_JIT_MODULE names, if it is set: relative to the current directory, as a path
/// given on a command line would be (dlopen would search the library path for a bare name).
std::optional<fs::path> moduleFromEnvironment() {
  const char *set = std::getenv("BREVIS_JIT_MODULE");
  if (!set || !*set) return std::nullopt;
  return fs::absolute(set);
}

/// The directory of compiled code kept across runs: $BREVIS_JIT_CACHE ("off" or empty: none),
/// else $XDG_CACHE_HOME/brevis/jit, else $HOME/.cache/brevis/jit (absolute paths only).
std::string jitCacheDirectory() {
  if (const char *set = std::getenv("BREVIS_JIT_CACHE")) {
    if (!*set || std::string_view(set) == "off") return {};
    return fs::absolute(set).string();
  }
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return std::string(xdg) + "/brevis/jit";
  if (const char *home = std::getenv("HOME"); home && *home == '/') return std::string(home) + "/.cache/brevis/jit";
  return {};
}

/// Where the JIT module may be, in the order searched (DecoderFactory.h), when no file is named.
std::vector<fs::path> moduleCandidates() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return candidates;
  const fs::path dir = exe.parent_path();
  candidates.push_back(dir / kJitModuleFileName);
  candidates.push_back((dir / ".." / "lib" / "brevis" / kJitModuleFileName).lexically_normal());
  // Executables in the build tree are rebuilt together with its module (an installed one, or a
  // copy elsewhere, never picks up a build tree's module that may have moved on since).
  const fs::path build = fs::weakly_canonical(BREVIS_JIT_BUILD_DIR, ec);
  if (!ec) {
    const auto [b, e] = std::mismatch(build.begin(), build.end(), exe.begin(), exe.end());
    if (b == build.end()) candidates.push_back(BREVIS_JIT_BUILD_MODULE);
  }
  return candidates;
}

std::string joined(const std::vector<fs::path> &paths) {
  std::string s;
  for (const fs::path &p : paths) s += (s.empty() ? "" : ", ") + p.string();
  return s;
}

/// The module's path: the first candidate that exists.
Result<std::string> findModule() {
  const std::optional<fs::path> named = moduleFromEnvironment();
  const std::vector<fs::path> candidates = named ? std::vector{*named} : moduleCandidates();
  const auto found = std::find_if(candidates.begin(), candidates.end(), [](const fs::path &p) {
    std::error_code ec;
    return fs::exists(p, ec);
  });
  if (found == candidates.end()) {
    if (named)
      return Error{fmt::format("--jit needs the JIT module {}, but BREVIS_JIT_MODULE names {}, which does not exist; "
                               "correct or unset it, or decode without --jit",
                               kJitModuleFileName, named->string())};
    const std::string where =
        candidates.empty() ? "nowhere: the executable's path is unknown" : "for " + joined(candidates);
    return Error{fmt::format("--jit needs the JIT module {}, which was not found (looked {}); set BREVIS_JIT_MODULE "
                             "to its path, or decode without --jit",
                             kJitModuleFileName, where)};
  }
  return found->string();
}

/// Loads the module at `path` once per process; never unloaded, since decoders, LLVM's threads
/// and its static state live until exit.
Result<JitModuleFactory> loadModule(const std::string &path) {
  // RTLD_NOW: a module that lacks a symbol fails here, with a message, not at its first call.
  // RTLD_LOCAL: its symbols stay out of the process's global scope.
  void *module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module)
    return Error{fmt::format("cannot load the JIT module {}: {}; decode without --jit", path, ::dlerror())};
  const auto *id = static_cast<const char *>(::dlsym(module, kJitModuleBuildIdSymbol));
  if (!id) return Error{fmt::format("{} is not a brevis JIT module; decode without --jit", path)};
  if (std::strcmp(id, kJitBuildId) != 0)
    return Error{fmt::format("{} is not the JIT module of this build (it was built as '{}', this program as '{}'); "
                             "decode without --jit",
                             path, id, kJitBuildId)};
  auto factory = reinterpret_cast<JitModuleFactory>(::dlsym(module, kJitModuleFactorySymbol));
  if (!factory)
    return Error{fmt::format("the JIT module {} has no {}; decode without --jit", path, kJitModuleFactorySymbol)};
  return factory;
}

/// The JIT decoder the module makes (the module loaded by the first call).
Result<std::unique_ptr<RegionDecoder>> makeJitDecoder(const std::string &path, const JitSettings &settings) {
  static const Result<JitModuleFactory> factory = loadModule(path);
  if (!factory) return factory.error();
  Result<std::unique_ptr<RegionDecoder>> decoder = Error{"the JIT module made no decoder"};
  (*factory)(&settings, &decoder);
  return decoder;
}

} // namespace

Result<std::unique_ptr<RegionDecoder>> makeRegionDecoder(bool jit, std::function<void(const std::string &)> notice,
                                                         const std::string &emitLlvm) {
  if (!jit) return std::unique_ptr<RegionDecoder>(std::make_unique<Interpreter>());
  static const Result<std::string> path = findModule();
  if (!path) return path.error();
  // Code loaded from the cache has no optimized IR to show: --emit-llvm compiles everything.
  JitSettings settings{std::move(notice), emitLlvm, emitLlvm.empty() ? jitCacheDirectory() : std::string(), {}};
  if (settings.cacheDir.empty()) return makeJitDecoder(*path, settings);
  // Code the module compiled before, for this CPU, is loaded without the module (and LLVM); the
  // module is loaded for the first shape the cache lacks.
  const std::string module = jit::moduleIdentity(*path);
  if (module.empty()) return makeJitDecoder(*path, settings);
  settings.shapeIdentity = fmt::format("{}\n{}\n{}", kJitBuildId, module, jit::cpuIdentity());
  auto shapes = jit::ShapeCodeCache::open(settings.cacheDir, settings.shapeIdentity);
  if (!shapes) return makeJitDecoder(*path, settings);
  return std::unique_ptr<RegionDecoder>(std::make_unique<CachedCodeDecoder>(
      std::move(shapes), [settings, modulePath = *path] { return makeJitDecoder(modulePath, settings); },
      JitDecoder::kMaxSessionNodes));
}

} // namespace brevis
