#include "model/model.h"

#include "core/error.h"

namespace gossamer::model {

void Model::forward_sample(const ForwardBatch&, std::span<const RowSampling>, std::vector<int32_t>&,
                           std::vector<RowLogprobs>&) {
  GOSSAMER_THROW("the ", backend_name(), " backend does not sample on its device (use forward)");
}

}  // namespace gossamer::model
