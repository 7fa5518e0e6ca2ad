// gossamer_kernel_trace: a CUDA injection library that records when every kernel ran on the GPU. Load it into
// any CUDA program through the driver's injection hook:
//   CUDA_INJECTION64_PATH=build/bench/kernels/libgossamer_kernel_trace.so GOSSAMER_KERNEL_TRACE=trace.tsv
//       build/gossamer bench decode ...
// (one command line).
// At exit it writes one line per kernel, sorted by start (tab-separated; times in ns on the GPU's clock):
//   start  end  graph_id  ctas  name (demangled)
// bench/kernels/kernel_timeline.py reads it. Why: the device has no Nsight Systems, and Nsight Compute runs
// kernels one at a time, so neither shows how the kernels of a CUDA-graph decode step overlap through PDL, which
// is where a batch-1 step's time goes (docs/PERF.md, #15). CUPTI's concurrent-kernel activity records keep
// the kernels' own timing (no serialisation).
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct KernelRecord {
  uint64_t start, end;
  uint32_t graph_id;
  int64_t ctas;
  std::string name;
};

std::mutex records_mutex;
std::vector<KernelRecord>& records() {
  static auto* all = new std::vector<KernelRecord>();  // outlives static destructors at exit
  return *all;
}

std::string demangle(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> plain(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && plain ? std::string(plain.get()) : std::string(name);
}

void report(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::fprintf(stderr, "gossamer_kernel_trace: %s failed: %s\n", what, text ? text : "?");
}

constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::vector<KernelRecord> batch;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    batch.push_back({k->start, k->end, k->graphId, int64_t{k->gridX} * k->gridY * k->gridZ, demangle(k->name)});
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(records_mutex);
  records().insert(records().end(), batch.begin(), batch.end());
}

void write_trace() {
  report(cuptiActivityFlushAll(1), "cuptiActivityFlushAll");
  const char* path = std::getenv("GOSSAMER_KERNEL_TRACE");
  std::FILE* out = std::fopen(path && *path ? path : "kernel_trace.tsv", "w");
  if (out == nullptr) {
    std::fprintf(stderr, "gossamer_kernel_trace: cannot write %s\n", path ? path : "kernel_trace.tsv");
    return;
  }
  std::lock_guard<std::mutex> lock(records_mutex);
  std::vector<KernelRecord>& all = records();
  std::sort(all.begin(), all.end(), [](const KernelRecord& a, const KernelRecord& b) { return a.start < b.start; });
  for (const KernelRecord& r : all) {
    std::fprintf(out, "%llu\t%llu\t%u\t%lld\t%s\n", static_cast<unsigned long long>(r.start),
                 static_cast<unsigned long long>(r.end), r.graph_id, static_cast<long long>(r.ctas), r.name.c_str());
  }
  std::fclose(out);
  std::fprintf(stderr, "gossamer_kernel_trace: %zu kernels\n", all.size());
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library.
extern "C" int InitializeInjection(void) {
  report(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  report(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
  std::atexit(write_trace);
  return 1;
}
