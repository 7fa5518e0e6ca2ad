// `gossamer tokenize` and `gossamer detokenize`: the o200k_harmony tokenizer on stdin/stdout.
//   gossamer tokenize [--allow-special] < text.txt   -> [ids] (JSON)
//   gossamer detokenize [--lossy] < ids.json         -> text
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command.h"
#include "core/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace gossamer::app {

namespace {

using text::TokenId;

void write_all(std::string_view bytes) {
  GOSSAMER_CHECK(std::fwrite(bytes.data(), 1, bytes.size(), stdout) == bytes.size() && std::fflush(stdout) == 0,
                 "cannot write to stdout");
}

int run_tokenize(int argc, char** argv) {
  CLI::App cli{"Encode UTF-8 text with o200k_harmony; prints the token ids as a JSON array"};
  std::string input = "-";
  bool allow_special = false;
  cli.add_option("--input", input, "text file to encode ('-' = stdin)");
  cli.add_flag("--allow-special", allow_special,
               "turn special-token text such as <|start|> into its id (default: encode it as ordinary text)");
  CLI11_PARSE(cli, argc, argv);

  const std::string text = read_input(input);
  text::check_utf8(text, "input");
  const auto tokenizer = text::Tokenizer::load_default();
  const std::vector<TokenId> ids =
      allow_special ? tokenizer->encode(text, {}, /*allow_all_special=*/true) : tokenizer->encode_ordinary(text);
  write_all(nlohmann::json(ids).dump() + "\n");
  return 0;
}

// Accepts [ids] or {"tokens": [ids]} (the output of `gossamer harmony render`).
std::vector<TokenId> parse_ids(const std::string& source, const std::string& name) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(source);
  } catch (const nlohmann::json::exception& error) {
    GOSSAMER_THROW(name, ": invalid JSON: ", error.what());
  }
  if (json.is_object() && json.contains("tokens")) json = json["tokens"];
  GOSSAMER_CHECK(json.is_array(), name, ": expected a JSON array of token ids (or {\"tokens\": [...]})");
  std::vector<TokenId> ids;
  ids.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    const auto& value = json[i];
    GOSSAMER_CHECK(value.is_number_integer(), name, ": element ", i, " is not an integer token id: ", value.dump());
    const auto id = value.get<int64_t>();
    GOSSAMER_CHECK(id >= 0 && id < text::kVocabSize, name, ": element ", i, ": Invalid token for decoding: ", id);
    ids.push_back(static_cast<TokenId>(id));
  }
  return ids;
}

int run_detokenize(int argc, char** argv) {
  CLI::App cli{"Decode a JSON array of o200k_harmony token ids to text"};
  std::string input = "-";
  bool lossy = false;
  cli.add_option("--input", input, "JSON file of ids ('-' = stdin)");
  cli.add_flag("--lossy", lossy, "replace invalid UTF-8 (ids that cut a character) with U+FFFD instead of failing");
  CLI11_PARSE(cli, argc, argv);

  const std::vector<TokenId> ids = parse_ids(read_input(input), input == "-" ? "stdin" : input);
  const auto tokenizer = text::Tokenizer::load_default();
  const std::string bytes = tokenizer->decode_bytes(ids);
  if (lossy) {
    write_all(text::utf8_lossy(bytes));
    return 0;
  }
  const size_t valid = text::utf8_valid_prefix(bytes);
  GOSSAMER_CHECK(valid == bytes.size(), "the ids decode to invalid UTF-8 at byte ", valid,
                 " (a character is cut between tokens); use --lossy to replace it with U+FFFD");
  write_all(bytes);
  return 0;
}

}  // namespace

GOSSAMER_REGISTER_COMMAND("tokenize", "encode UTF-8 text (stdin) to o200k_harmony token ids (JSON)", run_tokenize);
GOSSAMER_REGISTER_COMMAND("detokenize", "decode token ids (JSON on stdin) to text", run_detokenize);

}  // namespace gossamer::app
