// EngineConfig: the engine's knobs, filled from the CLI, validated once, never written back.
//
// Contract: validate() throws gossamer::Error naming the first bad field. resolve() fills the derived
// fields that depend on the model (max_model_len 0 → the model's context, num_kv_blocks 0 → enough
// blocks for max_num_seqs full-length sequences capped by kv_cache_memory_bytes) and then validates.
#pragma once

#include <cstdint>

namespace gossamer::model {
class Model;
}

namespace gossamer::engine {

struct EngineConfig {
  int32_t max_num_seqs = 256;               // most sequences in one step (running batch size)
  int32_t max_num_batched_tokens = 2048;    // token budget of one step (prefill chunks + decodes)
  int32_t max_model_len = 0;                // prompt + output limit per request; 0 = the model's context
  int32_t block_size = 16;                  // KV positions per cache block
  int32_t num_kv_blocks = 0;                // KV cache blocks; 0 = derived from kv_cache_memory_bytes
  int64_t kv_cache_memory_bytes = 1LL << 30;  // KV budget used when num_kv_blocks is 0
  int32_t max_queued_requests = 1024;       // waiting requests beyond which submit() is refused (HTTP 429)
  uint64_t default_seed = 0;                // seed for requests that give none (mixed with the request id)

  void validate() const;
  // Fills max_model_len and num_kv_blocks from the model, then validates. Returns the resolved copy.
  EngineConfig resolve(const model::Model& model) const;
};

}  // namespace gossamer::engine
