#pragma once
// Errors as values. User-facing failures (bad input files, corrupt payloads) travel as
// Error; internal invariants are asserts.
#include "lang/SourceLoc.h"

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace brevis {

struct Error {
  std::string message; ///< one plain sentence, lowercase, no trailing period
  SourceLoc loc = {};  ///< where in program text it lies, when it concerns one region or node
};

template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  explicit operator bool() const { return state_.index() == 0; }
  T &operator*() { assert(*this); return std::get<0>(state_); }
  const T &operator*() const { assert(*this); return std::get<0>(state_); }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }
  const Error &error() const { assert(!*this); return std::get<1>(state_); }

private:
  std::variant<T, Error> state_;
};

template <> class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}
  explicit operator bool() const { return !failed_; }
  const Error &error() const { assert(failed_); return error_; }

private:
  Error error_;
  bool failed_ = false;
};

/// Returns early from the enclosing function with the error of a failed Result.
#define BREVIS_TRY(expr)                                                                      \
  do {                                                                                        \
    if (auto brevis_try_result_ = (expr); !brevis_try_result_)                                \
      return brevis_try_result_.error();                                                      \
  } while (0)

} // namespace brevis
