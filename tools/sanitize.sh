#!/usr/bin/env bash
# Builds Brevis with AddressSanitizer and UndefinedBehaviorSanitizer in build-asan/ (clang-19,
# RelWithDebInfo, every UBSan finding fatal) and runs the test suite under them. The build is
# also instrumented for libFuzzer (BREVIS_FUZZ), so that the fuzz targets run from the same
# objects:  BREVIS_FUZZ_BUILD_DIR=build-asan tools/fuzz.sh 20  (as .ci/run does).
# Tests labelled `slow-under-asan` are left out (none at present; label one in CMake with
# set_tests_properties(NAME PROPERTIES LABELS slow-under-asan) and say why next to it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/tools/setup.sh" clang-19 libclang-rt-19-dev
build="${BREVIS_ASAN_BUILD_DIR:-$root/build-asan}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBREVIS_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
fi
cmake --build "$build" -- -j"$(nproc)"
# abort_on_error: a finding is a crash that ctest reports, with the sanitizer's report.
export ASAN_OPTIONS="abort_on_error=1:detect_stack_use_after_return=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
ctest --test-dir "$build" --output-on-failure --timeout 900 -j"$(nproc)" -LE slow-under-asan
