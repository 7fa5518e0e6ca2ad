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
                 "cache, behind one server (also -dp; serve only; on cuda replica r takes GPUs [r*TP, (r+1)*TP))")
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

void check_parallel_layout(const model::ModelOptions& options, const std::string& device) {
  const model::ParallelLayout& layout = options.layout;
  GOSSAMER_CHECK(layout.tensor_parallel >= 1 && layout.data_parallel >= 1,
                 "--tensor-parallel-size and --data-parallel-size must be ≥ 1");
  if (device == "cuda") {
    const int gpus = model::visible_gpu_count();
    const int needed = options.colocate_on_gpu0 ? 1 : layout.num_devices();
    GOSSAMER_CHECK(needed <= gpus, "layout ", layout.describe_with_dp(), " needs ", needed,
                   options.colocate_on_gpu0 ? " GPU (colocated ranks)" : " GPUs (tensor-parallel × data-parallel)",
                   ", but ", gpus, " are present");
  }
}

void check_single_replica(const model::ModelOptions& options, const std::string& device) {
  check_parallel_layout(options, device);
  GOSSAMER_CHECK(options.layout.data_parallel == 1, "--data-parallel-size ", options.layout.data_parallel,
                 ": this command runs one replica; replicas behind one server are `gossamer serve -dp N`");
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
    line += ", weights " + (options.weights == "mxfp4" ? std::string("mxfp4 experts + fp8") : options.weights) + " (" +
            gib + " GiB)";
  }
  return line;
}

std::string placement_summary(const model::ModelOptions& options) {
  const model::ParallelLayout& layout = options.layout;
  if (options.colocate_on_gpu0) return layout.num_devices() > 1 ? "every rank on GPU 0 (colocated)" : "GPU 0";
  std::string groups;
  for (int32_t replica = 0; replica < layout.data_parallel; ++replica) {
    model::ModelOptions first = options, last = options;
    first.replica = last.replica = replica;
    first.rank = 0;
    last.rank = layout.tensor_parallel - 1;
    const int32_t begin = model::gpu_of(first), end = model::gpu_of(last);
    groups += (replica > 0 ? ", " : "") + std::to_string(begin) + (end > begin ? "-" + std::to_string(end) : "");
  }
  if (layout.data_parallel > 1) return "replicas on GPUs " + groups;
  return (layout.tensor_parallel > 1 ? "GPUs " : "GPU ") + groups;
}

}  // namespace gossamer::app
