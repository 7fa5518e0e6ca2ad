// One rank of a CudaCommunicator group, run as its own process by tests/comm_gpu (several may share one
// GPU). Sums deterministic inputs (eager and graph-captured) and checks every result bitwise against the
// host's rank-order sum. Exit 0: all checks passed; 1: a wrong result; 2: CommError (printed); 3: the
// rank "died" on purpose (--die-after-setup); --hang-after-setup: the rank stops responding (sleeps
// until killed) with its buffers still mapped.
//
// usage: gossamer_comm_gpu_worker --rank R --world N --port P [--nccl] [--timeout-ms T]
//        [--die-after-setup | --hang-after-setup]
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "comm/cuda/cuda_communicator.h"
#include "core/dtype.h"

namespace {

using gossamer::DType;
using gossamer::comm::CommError;
using gossamer::comm::CudaCommOptions;
using gossamer::comm::CudaCommunicator;

#define WORKER_CHECK(call)                                                          \
  do {                                                                              \
    const cudaError_t status_ = (call);                                             \
    if (status_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "worker: %s: %s\n", #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

// Exactly representable in bf16, so the host's rank-order f32 sum is the device's bit for bit.
float input_value(int rank, int64_t i, int iteration) {
  return static_cast<float>((rank + 1) * 4 + static_cast<int>(i % 61) - 30 - 8 * iteration) * 0.125f;
}

struct Case {
  int64_t count;
  DType dtype;
};

// Fills the input of `rank`, stored as dtype.
std::vector<uint8_t> make_input(const Case& c, int rank, int iteration) {
  std::vector<uint8_t> bytes(static_cast<size_t>(c.count * gossamer::size_of(c.dtype)));
  for (int64_t i = 0; i < c.count; ++i) {
    const float v = input_value(rank, i, iteration);
    if (c.dtype == DType::kBF16) {
      const uint16_t bits = gossamer::float_to_bf16(v);
      std::memcpy(bytes.data() + 2 * i, &bits, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    }
  }
  return bytes;
}

std::vector<uint8_t> expected_sum(const Case& c, int world, int iteration) {
  std::vector<uint8_t> bytes(static_cast<size_t>(c.count * gossamer::size_of(c.dtype)));
  for (int64_t i = 0; i < c.count; ++i) {
    float sum = 0.0f;
    for (int r = 0; r < world; ++r) sum += input_value(r, i, iteration);  // rank order, f32
    if (c.dtype == DType::kBF16) {
      const uint16_t bits = gossamer::float_to_bf16(sum);
      std::memcpy(bytes.data() + 2 * i, &bits, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &sum, 4);
    }
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  CudaCommOptions options;
  bool die = false, hang = false;
  options.bootstrap.host = "127.0.0.1";
  options.use_nccl = false;
  options.timeout = std::chrono::milliseconds(20000);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : "0";
    if (arg == "--rank")
      options.bootstrap.rank = std::atoi(value), ++i;
    else if (arg == "--world")
      options.bootstrap.world_size = std::atoi(value), ++i;
    else if (arg == "--port")
      options.bootstrap.port = std::atoi(value), ++i;
    else if (arg == "--timeout-ms")
      options.timeout = std::chrono::milliseconds(std::atoi(value)), ++i;
    else if (arg == "--nccl")
      options.use_nccl = true;
    else if (arg == "--die-after-setup")
      die = true;
    else if (arg == "--hang-after-setup")
      hang = true;
  }
  options.bootstrap.timeout = options.timeout;
  const int rank = options.bootstrap.rank, world = options.bootstrap.world_size;
  try {
    CudaCommunicator comm(options);
    if (die || hang) {
      std::printf("rank %d: %s after setup\n", rank, die ? "dying" : "hanging");
      std::fflush(stdout);
      if (die) _exit(3);
      sleep(600);
    }
    cudaStream_t stream;
    WORKER_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<Case> cases = {{2880, DType::kBF16},
                               {2880 * 16, DType::kBF16},
                               {2880 * 128, DType::kBF16},
                               {2880 * 4, DType::kF32},
                               {2880 * 64, DType::kF32}};
    if (options.use_nccl) cases.push_back({int64_t{1} << 22, DType::kF32});  // 16 MB: the NCCL path
    int checks = 0;
    for (const Case& c : cases) {
      const size_t bytes = static_cast<size_t>(c.count * gossamer::size_of(c.dtype));
      void* data = nullptr;
      WORKER_CHECK(cudaMalloc(&data, bytes));
      std::vector<uint8_t> result(bytes);
      auto check = [&](int iteration, const char* how) {
        WORKER_CHECK(cudaMemcpy(result.data(), data, bytes, cudaMemcpyDeviceToHost));
        if (result != expected_sum(c, world, iteration)) {
          std::printf("rank %d: WRONG sum (%s, %lld x %s, iteration %d, path %s)\n", rank, how,
                      static_cast<long long>(c.count), std::string(gossamer::name_of(c.dtype)).c_str(), iteration,
                      comm.path_for(data, c.count, c.dtype));
          std::exit(1);
        }
        ++checks;
      };
      // ---- eager ----
      for (int iteration = 0; iteration < 2; ++iteration) {
        const auto input = make_input(c, rank, iteration);
        WORKER_CHECK(cudaMemcpyAsync(data, input.data(), bytes, cudaMemcpyHostToDevice, stream));
        comm.all_reduce(data, c.count, c.dtype, gossamer::comm::ReduceOp::kSum, stream);
        comm.synchronize(stream);
        check(iteration, "eager");
      }
      // ---- graph-captured once, replayed with new inputs ----
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      WORKER_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      comm.all_reduce(data, c.count, c.dtype, gossamer::comm::ReduceOp::kSum, stream);
      WORKER_CHECK(cudaStreamEndCapture(stream, &graph));
      WORKER_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      for (int iteration = 2; iteration < 5; ++iteration) {
        const auto input = make_input(c, rank, iteration);
        WORKER_CHECK(cudaMemcpyAsync(data, input.data(), bytes, cudaMemcpyHostToDevice, stream));
        WORKER_CHECK(cudaGraphLaunch(exec, stream));
        comm.synchronize(stream);
        check(iteration, "graph");
      }
      std::printf("rank %d: %lld x %s via %s OK\n", rank, static_cast<long long>(c.count),
                  std::string(gossamer::name_of(c.dtype)).c_str(), comm.path_for(data, c.count, c.dtype));
      WORKER_CHECK(cudaGraphExecDestroy(exec));
      WORKER_CHECK(cudaGraphDestroy(graph));
      WORKER_CHECK(cudaFree(data));
    }
    if (options.use_nccl) {  // all_gather (NCCL) of each rank's id
      int32_t* gathered = nullptr;
      int32_t* mine = nullptr;
      WORKER_CHECK(cudaMalloc(&gathered, sizeof(int32_t) * world));
      WORKER_CHECK(cudaMalloc(&mine, sizeof(int32_t)));
      const int32_t value = 100 + rank;
      WORKER_CHECK(cudaMemcpy(mine, &value, sizeof(value), cudaMemcpyHostToDevice));
      comm.all_gather(mine, gathered, sizeof(int32_t), stream);
      comm.synchronize(stream);
      std::vector<int32_t> host(static_cast<size_t>(world));
      WORKER_CHECK(cudaMemcpy(host.data(), gathered, sizeof(int32_t) * world, cudaMemcpyDeviceToHost));
      for (int r = 0; r < world; ++r) {
        if (host[static_cast<size_t>(r)] != 100 + r) {
          std::printf("rank %d: WRONG all_gather\n", rank);
          return 1;
        }
      }
      std::printf("rank %d: all_gather OK\n", rank);
    }
    std::printf("rank %d: OK %d checks (ipc %s)\n", rank, checks, comm.ipc_enabled() ? "on" : "off");
    return 0;
  } catch (const CommError& error) {
    std::printf("rank %d: CommError: %s\n", rank, error.what());
    return 2;
  } catch (const std::exception& error) {
    std::printf("rank %d: error: %s\n", rank, error.what());
    return 1;
  }
}
