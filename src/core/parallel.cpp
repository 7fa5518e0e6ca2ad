#include "core/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gossamer {

int cpu_thread_count() {
  static const int count = [] {
    if (const char* env = std::getenv("GOSSAMER_CPU_THREADS")) {
      const int value = std::atoi(env);
      if (value > 0) return value;
    }
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return count;
}

void parallel_for(int64_t count, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) {
  if (count <= 0) return;
  const int64_t max_workers = std::max<int64_t>(1, count / std::max<int64_t>(1, min_chunk));
  const int64_t workers = std::min<int64_t>(cpu_thread_count(), max_workers);
  if (workers <= 1) {
    fn(0, count);
    return;
  }
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto run = [&](int64_t begin, int64_t end) {
    try {
      fn(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  const int64_t chunk = (count + workers - 1) / workers;
  for (int64_t w = 1; w < workers; ++w) {
    const int64_t begin = w * chunk, end = std::min(count, begin + chunk);
    if (begin < end) threads.emplace_back(run, begin, end);
  }
  run(0, std::min(count, chunk));
  for (std::thread& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace gossamer
