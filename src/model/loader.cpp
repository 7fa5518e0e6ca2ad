#include "model/loader.h"

#include "core/error.h"
#include "model/checkpoint.h"
#include "model/cpu_model.h"

namespace gossamer::model {

std::unique_ptr<Model> load_model(const std::string& dir, const std::string& device) {
  if (device == "cpu") {
    std::shared_ptr<Checkpoint> checkpoint = Checkpoint::open(dir);
    const GptOssConfig config = checkpoint->config();
    GptOssWeights weights = checkpoint->weights();
    return std::make_unique<CpuModel>(config, std::move(weights), std::move(checkpoint));
  }
  GOSSAMER_CHECK(device == "cuda", "unknown device '", device, "' (expected cpu or cuda)");
  GOSSAMER_THROW("the cuda model backend is not implemented yet; use --device cpu");
}

}  // namespace gossamer::model
