// parallel_for over an index range on short-lived worker threads (CPU reference backend only).
//
// Contract: fn(begin, end) is called on disjoint sub-ranges covering [0, count) exactly once each;
// it returns after every call finished. The first exception thrown by fn is rethrown. Thread count is
// hardware_concurrency(), or GOSSAMER_CPU_THREADS when set.
#pragma once

#include <cstdint>
#include <functional>

namespace gossamer {

int cpu_thread_count();
void parallel_for(int64_t count, int64_t min_chunk, const std::function<void(int64_t begin, int64_t end)>& fn);

}  // namespace gossamer
