#pragma once
// One pool of worker threads for the whole process: synthesis, verification and decoding hand it
// index ranges instead of starting threads of their own. Workers start on first use, as many as
// the largest request asked for, and then wait for work; a call's caller always works too, so a
// call made while every worker is busy (or from inside a worker) still finishes, on fewer threads.
// A caller whose indices are all handed out helps with calls queued while it waits for its
// workers, so that work a worker starts from inside a call (a large tensor's fields) is shared.
#include "lang/Result.h"

#include <cstddef>
#include <functional>

namespace brevis {

/// Runs work(i) for every i in [0, n) on at most `threads` threads (the caller's among them;
/// 0 counts as 1), handing indices out in increasing order; returns when every call has returned.
void parallelFor(size_t n, unsigned threads, const std::function<void(size_t)> &work);

/// The same for work that can fail: no index is handed out after the first failure, and the
/// failure of the smallest index is returned (the same one for any thread count, given that
/// the work's result does not depend on the thread count).
Result<void> parallelForEach(size_t n, unsigned threads, const std::function<Result<void>(size_t)> &work);

} // namespace brevis
