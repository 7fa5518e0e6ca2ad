// Opens a checkpoint directory and returns a ready model on the requested backend.
//
// `device` is "cpu" (float32 reference) or "cuda". Throws gossamer::Error with a clear message for a
// bad checkpoint or an unavailable backend.
#pragma once

#include <memory>
#include <string>

#include "model/model.h"

namespace gossamer::model {

std::unique_ptr<Model> load_model(const std::string& dir, const std::string& device = "cpu");

}  // namespace gossamer::model
