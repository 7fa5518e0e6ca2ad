// Shared helpers for comparing the CPU backend with golden logits from transformers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/npy.h"
#include "model/model.h"
#include "model/sequence_runner.h"

namespace gossamer::model::testing {

// $GOSSAMER_TEST_DATA_DIR overrides the compiled-in path (binaries carried to the GPU machine).
inline std::string golden_dir() {
  const char* override_dir = std::getenv("GOSSAMER_TEST_DATA_DIR");
  return std::string(override_dir ? override_dir : GOSSAMER_TEST_DATA_DIR) + "/golden";
}

inline std::vector<std::vector<int32_t>> golden_tokens(const std::string& name) {
  const auto parsed = nlohmann::json::parse(read_text_file(golden_dir() + "/" + name + "_tokens.json"));
  return parsed.get<std::vector<std::vector<int32_t>>>();
}

inline NpyArray golden_logits(const std::string& name) {
  return read_npy_f32(golden_dir() + "/" + name + "_logits.npy");
}

struct Agreement {
  double relative_l2 = 0.0;   // ‖ours − ref‖ / ‖ref‖ over the compared rows
  double argmax_match = 0.0;  // fraction of rows with the same argmax
};

// Compares `rows` rows of width `vocab` starting at ours[0] and ref[0].
inline Agreement compare_rows(const float* ours, const float* ref, int64_t rows, int64_t vocab) {
  double diff = 0.0, norm = 0.0;
  int64_t same = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best_ours = 0, best_ref = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      const double a = ours[r * vocab + v], b = ref[r * vocab + v];
      diff += (a - b) * (a - b);
      norm += b * b;
      if (ours[r * vocab + v] > ours[r * vocab + best_ours]) best_ours = v;
      if (ref[r * vocab + v] > ref[r * vocab + best_ref]) best_ref = v;
    }
    same += best_ours == best_ref;
  }
  return Agreement{std::sqrt(diff / norm), static_cast<double>(same) / static_cast<double>(rows)};
}

// Logits [len, vocab] of one sequence prefilled in chunks of `chunk` tokens (chunked prefill: every chunk
// after the first attends to its cached prefix through the KV cache), one forward per chunk.
inline std::vector<float> chunked_prefill_logits(Model& model, const std::vector<int32_t>& sequence, int32_t chunk) {
  const auto length = static_cast<int32_t>(sequence.size());
  std::vector<int32_t> table(static_cast<size_t>((length + kRunnerBlockSize - 1) / kRunnerBlockSize));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  model.allocate_kv_cache(static_cast<int32_t>(table.size()), kRunnerBlockSize);
  std::vector<float> all, logits;
  for (int32_t at = 0; at < length; at += chunk) {
    const int32_t n = std::min(chunk, length - at);
    ForwardBatch batch;
    batch.sequences.push_back(
        SequenceInput{std::span<const int32_t>(sequence).subspan(static_cast<size_t>(at), static_cast<size_t>(n)), at,
                      table, LogitsWanted::kAll});
    model.forward(batch, logits);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

}  // namespace gossamer::model::testing
