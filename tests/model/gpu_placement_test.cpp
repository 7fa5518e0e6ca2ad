// model/loader.h gpu_of: data-parallel replica r of a TP group takes GPUs [r·TP, (r+1)·TP); the hidden
// colocation of the one-GPU tests puts every rank on GPU 0.
#include <gtest/gtest.h>

#include "model/loader.h"

namespace gossamer::model {
namespace {

TEST(GpuPlacement, ReplicaRTakesTheGpusFromRTimesTp) {
  ModelOptions options;
  options.layout = ParallelLayout{2, false, 4};
  std::vector<int32_t> gpus;
  for (int32_t replica = 0; replica < 4; ++replica) {
    for (int32_t rank = 0; rank < 2; ++rank) {
      options.replica = replica;
      options.rank = rank;
      gpus.push_back(gpu_of(options));
    }
  }
  EXPECT_EQ(gpus, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  options.layout = ParallelLayout{1, false, 3};
  options.rank = 0;
  options.replica = 2;
  EXPECT_EQ(gpu_of(options), 2);
}

TEST(GpuPlacement, ColocatedRanksAllSitOnGpuZero) {
  ModelOptions options;
  options.layout = ParallelLayout{4, true, 2};
  options.colocate_on_gpu0 = true;
  options.replica = 1;
  options.rank = 3;
  EXPECT_EQ(gpu_of(options), 0);
}

}  // namespace
}  // namespace gossamer::model
