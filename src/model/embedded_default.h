// The embedded default model: a small random-weight gpt-oss-architecture model with the full
// o200k_harmony vocabulary (201,088 rows), built in memory at start-up on the CPU backend. It lets
// `gossamer serve` and the tests run with no checkpoint and no GPU. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/model.h"

namespace gossamer::model {

// Name reported in /v1/models for the embedded default.
inline constexpr const char* kEmbeddedDefaultName = "gossamer-embedded-default-random";

std::unique_ptr<Model> make_embedded_default_model(uint64_t seed = 0);

}  // namespace gossamer::model
