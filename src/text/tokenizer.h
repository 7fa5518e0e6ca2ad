// The o200k_harmony tokenizer: o200k_base BPE ranks (ids 0..199997) + Harmony special tokens
// (ids 199998..201087). Exact parity with OpenAI's tiktoken is the contract.
//
// Contract:
//  - A Tokenizer is immutable after construction and safe to use from many threads at once.
//  - encode_ordinary treats special-token text as ordinary text; encode splits out the specials named
//    in `allowed_special` (all of them with allow_all_special) and encodes the rest as ordinary text.
//    Special-token text that is not allowed is encoded as ordinary text, never an error (tiktoken's core
//    `encode`; the Python layer's "disallowed special" error is a policy callers can add with
//    special_token_id).
//  - Input text must be valid UTF-8: invalid input throws gossamer::Error (the message gives the byte offset).
//  - decode_bytes returns raw bytes (which may be invalid UTF-8 when cut mid-character); unknown ids throw
//    "Invalid token for decoding: N". 201088 (the harmony crate's extra <|reserved_201088|>) is not a token.
//  - special_token_id also maps o200k_base's "<|endofprompt|>" to 200018, as tiktoken's o200k_harmony does;
//    token_bytes(200018) is "<|reserved_200018|>", as in the harmony crate.
//  - Streaming decode to text: IncrementalDetokenizer (incremental_detokenizer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace gossamer::text {

using TokenId = int32_t;

inline constexpr TokenId kNumOrdinaryTokens = 199998;
inline constexpr TokenId kVocabSize = 201088;  // embedding rows of gpt-oss

class Tokenizer {
 public:
  // Loads the ranks from the npm `tiktoken` package's `encoders/o200k_base.json` (compact format), checks
  // the SHA-256 of the rebuilt `.tiktoken` text, and adds the Harmony special tokens.
  static std::shared_ptr<const Tokenizer> load_o200k_harmony(const std::string& o200k_base_json_path);
  // Finds the data file: $GOSSAMER_TIKTOKEN_JSON, else <repo>/node_modules/tiktoken/encoders/o200k_base.json
  // searched upwards from the executable and the working directory. Throws with set-up advice if absent.
  static std::shared_ptr<const Tokenizer> load_default();

  virtual ~Tokenizer() = default;

  virtual std::vector<TokenId> encode_ordinary(std::string_view text) const = 0;
  // encode_ordinary's ids, computed on up to `max_threads` threads (the caller's among them; 0: the hardware's,
  // at most 8) for texts of 64 KiB or more, split where no piece can cross (tokenizer_encode.h). This base
  // version is serial; o200k_harmony's is parallel.
  virtual std::vector<TokenId> encode_ordinary_parallel(std::string_view text, unsigned max_threads = 0) const {
    (void)max_threads;
    return encode_ordinary(text);
  }
  virtual std::vector<TokenId> encode(std::string_view text, const std::unordered_set<std::string>& allowed_special,
                                      bool allow_all_special = false) const = 0;
  virtual std::string decode_bytes(std::span<const TokenId> ids) const = 0;
  // Bytes of one token; throws on an id outside [0, kVocabSize) or an unassigned id.
  virtual std::string_view token_bytes(TokenId id) const = 0;
  virtual std::optional<TokenId> special_token_id(std::string_view text) const = 0;
  virtual bool is_special(TokenId id) const = 0;
  virtual TokenId vocab_size() const = 0;
};

}  // namespace gossamer::text
