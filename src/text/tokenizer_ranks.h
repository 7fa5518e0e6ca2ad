// Reads the o200k_base ranks from the npm `tiktoken` package's `encoders/o200k_base.json`, whose
// `bpe_ranks` field uses the compact format of npm tiktoken's encoders/o200k_base.json, and verifies them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gossamer::text {

// SHA-256 of OpenAI's `o200k_base.tiktoken` (pinned by tiktoken and harmony).
inline constexpr std::string_view kO200kBaseSha256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d";

struct RankData {
  std::string arena;              // bytes of every rank, back to back
  std::vector<uint32_t> offsets;  // [num_ranks + 1]: rank r is arena[offsets[r], offsets[r + 1])
  std::string pat_str;            // the file's pre-tokenization regex
  std::string sha256;             // of the rebuilt `.tiktoken` text
};

// Parses the compact `bpe_ranks` text. Throws gossamer::Error on malformed input (bad base64, gaps or
// repeats in the ranks). `source` names the input in error messages.
RankData decode_compact_ranks(std::string_view bpe_ranks, std::string_view source);

// Loads and checks the JSON file: the rebuilt `.tiktoken` text must hash to kO200kBaseSha256 and pat_str must
// be o200k's. Throws gossamer::Error with the path and set-up advice otherwise.
RankData load_o200k_base_json(const std::string& path);

}  // namespace gossamer::text
