// libFuzzer target: parsing, checking and printing arbitrary program text. A program that
// parses must print to a fixed point.
#include "frontend/Parser.h"
#include "lang/Printer.h"
#include "lang/TypeChecker.h"

#include <string>

using namespace brevis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  Diagnostics diags("fuzz.bdsl", text);
  auto module = parseModule(diags);
  (void)diags.render();
  if (!module) return 0;
  TypeChecker checker(diags);
  checker.checkModule(*module);
  std::string printed = printModule(*module);
  Diagnostics again("printed.bdsl", printed);
  auto reparsed = parseModule(again);
  if (!reparsed || printModule(*reparsed) != printed) __builtin_trap();
  return 0;
}
