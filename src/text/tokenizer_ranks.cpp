#include "text/tokenizer_ranks.h"

#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "text/pretokenizer.h"
#include "text/sha256.h"

namespace gossamer::text {

namespace {

constexpr std::string_view kSetupAdvice = "run `bash scripts/setup.sh` to (re)install the npm package tiktoken@1.0.22";

int8_t base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return static_cast<int8_t>(c - 'A');
  if (c >= 'a' && c <= 'z') return static_cast<int8_t>(c - 'a' + 26);
  if (c >= '0' && c <= '9') return static_cast<int8_t>(c - '0' + 52);
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Appends the standard-base64 decoding of `text` to `out`; false on malformed input.
bool decode_base64(std::string_view text, std::string& out) {
  if (text.empty() || text.size() % 4 != 0) return false;
  size_t padding = 0;
  if (text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t group = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      int8_t value = 0;
      if (c == '=') {
        if (i + 4 != text.size() || j < 4 - padding) return false;
      } else {
        value = base64_value(c);
        if (value < 0) return false;
      }
      group = (group << 6) | static_cast<uint32_t>(value);
    }
    const size_t num_bytes = i + 4 == text.size() ? 3 - padding : 3;
    for (size_t j = 0; j < num_bytes; ++j) out += static_cast<char>((group >> (16 - 8 * j)) & 0xFF);
  }
  return true;
}

}  // namespace

RankData decode_compact_ranks(std::string_view text, std::string_view source) {
  GOSSAMER_CHECK(!text.empty() && text[0] == '!', source, ": bpe_ranks is not in the compact format (no leading '!')");
  RankData data;
  data.offsets.push_back(0);
  Sha256 sha;
  std::string line_text;
  size_t line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t line_end = text.find('\n', pos);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::string_view line = text.substr(pos, line_end - pos);
    pos = line_end + 1;
    ++line_number;
    if (line.empty()) continue;
    // fields: "!" offset base64...
    size_t field_start = 0;
    size_t field_index = 0;
    uint64_t rank = 0;
    while (field_start <= line.size()) {
      size_t field_end = line.find(' ', field_start);
      if (field_end == std::string_view::npos) field_end = line.size();
      const std::string_view field = line.substr(field_start, field_end - field_start);
      field_start = field_end + 1;
      if (field_index == 0) {
        GOSSAMER_CHECK(field == "!", source, ": line ", line_number, " does not start with '!'");
      } else if (field_index == 1) {
        const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), rank);
        GOSSAMER_CHECK(ec == std::errc() && end == field.data() + field.size(), source, ": line ", line_number,
                       ": bad offset '", field, "'");
      } else {
        GOSSAMER_CHECK(rank == data.offsets.size() - 1, source, ": ranks are not contiguous at rank ", rank, " (line ",
                       line_number, ")");
        GOSSAMER_CHECK(decode_base64(field, data.arena), source, ": bad base64 '", field, "' for rank ", rank);
        data.offsets.push_back(static_cast<uint32_t>(data.arena.size()));
        // the `.tiktoken` line: "<base64> <rank>\n"
        line_text.assign(field);
        line_text += ' ';
        line_text += std::to_string(rank);
        line_text += '\n';
        sha.update(line_text);
        ++rank;
      }
      ++field_index;
    }
  }
  data.sha256 = sha.hex_digest();
  return data;
}

RankData load_o200k_base_json(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  GOSSAMER_CHECK(file, "cannot open tokenizer data ", path, "; ", kSetupAdvice);
  std::stringstream buffer;
  buffer << file.rdbuf();
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::exception& error) {
    GOSSAMER_THROW("tokenizer data ", path, " is not valid JSON (", error.what(), "); ", kSetupAdvice);
  }
  GOSSAMER_CHECK(json.is_object() && json.contains("bpe_ranks") && json["bpe_ranks"].is_string() &&
                     json.contains("pat_str") && json["pat_str"].is_string(),
                 "tokenizer data ", path, " lacks the string fields bpe_ranks and pat_str; ", kSetupAdvice);
  RankData data = decode_compact_ranks(json["bpe_ranks"].get_ref<const std::string&>(), path);
  data.pat_str = json["pat_str"].get<std::string>();
  GOSSAMER_CHECK(data.sha256 == kO200kBaseSha256, "tokenizer data ", path,
                 " is not o200k_base: the SHA-256 of its rebuilt .tiktoken text is ", data.sha256, ", expected ",
                 kO200kBaseSha256, "; ", kSetupAdvice);
  GOSSAMER_CHECK(data.pat_str == Pretokenizer::kO200kPatStr, "tokenizer data ", path,
                 " has an unexpected pat_str (not o200k's); ", kSetupAdvice);
  return data;
}

}  // namespace gossamer::text
