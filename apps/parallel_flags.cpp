#include "parallel_flags.h"

#include <cstdio>

#include "core/error.h"
#include "model/loader.h"

namespace gossamer::app {

void add_parallel_flags(CLI::App& cli, model::ParallelLayout& layout, const std::string& group) {
  cli.add_option("--tensor-parallel-size", layout.tensor_parallel, "ranks to split each replica over (also -tp)")
      ->envname("GOSSAMER_TENSOR_PARALLEL_SIZE")
      ->group(group);
  cli.add_flag("--enable-expert-parallel", layout.expert_parallel,
               "split the MoE by experts over the tensor-parallel group (EP = TP) instead of by intermediate columns")
      ->envname("GOSSAMER_ENABLE_EXPERT_PARALLEL")
      ->group(group);
  cli.add_option("--data-parallel-size", layout.data_parallel,
                 "independent replicas, each a tensor-parallel group with its own engine and KV "
                 "cache, behind one server (also -dp; serve on cpu only so far)")
      ->envname("GOSSAMER_DATA_PARALLEL_SIZE")
      ->group(group);
}

VllmArgs::VllmArgs(int argc, char** argv) : args_(argv, argv + argc) {
  for (std::string& arg : args_) {
    for (const auto& [short_name, long_name] :
         {std::pair<std::string, std::string>{"-tp", "--tensor-parallel-size"}, {"-dp", "--data-parallel-size"}}) {
      if (arg == short_name) arg = long_name;
      if (arg.rfind(short_name + "=", 0) == 0) arg = long_name + arg.substr(short_name.size());
    }
  }
  for (std::string& arg : args_) pointers_.push_back(arg.data());
}

void check_parallel_layout(const model::ParallelLayout& layout, const std::string& device) {
  GOSSAMER_CHECK(layout.tensor_parallel >= 1 && layout.data_parallel >= 1,
                 "--tensor-parallel-size and --data-parallel-size must be ≥ 1");
  if (device == "cuda") {
    const int gpus = model::visible_gpu_count();
    GOSSAMER_CHECK(layout.num_devices() <= gpus, "layout ", layout.describe_with_dp(), " needs ", layout.num_devices(),
                   " GPUs (tensor-parallel × data-parallel), but ", gpus, " are present");
  }
}

void check_single_replica(const model::ParallelLayout& layout, const std::string& device) {
  check_parallel_layout(layout, device);
  GOSSAMER_CHECK(layout.data_parallel == 1, "--data-parallel-size ", layout.data_parallel,
                 ": this command runs one replica; replicas behind one server are `gossamer serve -dp N`");
}

void check_serve_replicas(const model::ParallelLayout& layout, const std::string& device) {
  check_parallel_layout(layout, device);
  GOSSAMER_CHECK(layout.data_parallel == 1 || device != "cuda", "--data-parallel-size ", layout.data_parallel,
                 " on cuda: placing replicas on their GPUs is not built yet (-dp > 1 serves on cpu only); run one "
                 "gossamer per replica (each with its own --tensor-parallel-size and CUDA_VISIBLE_DEVICES) behind a "
                 "load balancer (docs/scaling.md)");
}

std::string layout_summary(const model::Model& model, const model::ModelOptions& options) {
  const model::ParallelLayout& layout = options.layout;
  std::string line = layout.describe_with_dp() + " on " + model.backend_name();
  const int32_t ranks = layout.tensor_parallel;
  if (model.backend_name() == "cpu" && ranks > 1) line += " (" + std::to_string(ranks) + " simulated ranks)";
  if (model.backend_name() == "cuda" && ranks > 1) line += " (" + std::to_string(ranks) + " processes, one per GPU)";
  if (model.backend_name() == "cuda") {
    char gib[32];
    std::snprintf(gib, sizeof gib, "%.1f", static_cast<double>(model.weight_bytes()) / double(1u << 30));
    line += ", weights " +
            (options.weights == "mxfp4"       ? std::string("mxfp4 experts + fp8")
             : options.weights == "mxfp4+fp8" ? std::string("mxfp4 and fp8 experts + fp8")
                                              : options.weights) +
            " (" + gib + " GiB)";
  }
  return line;
}

}  // namespace gossamer::app
