// `gossamer harmony render|parse`: the Harmony renderer and parser on JSON files (docs/harmony-json.md).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command.h"
#include "core/error.h"
#include "text/harmony_json.h"
#include "text/harmony_parser.h"
#include "text/harmony_renderer.h"
#include "text/tokenizer.h"

namespace gossamer::app {

namespace {

using Json = nlohmann::ordered_json;
using text::TokenId;
namespace harmony = text::harmony;

Json parse_json(const std::string& path) {
  try {
    return Json::parse(read_input(path));
  } catch (const nlohmann::json::exception& error) {
    GOSSAMER_THROW(path, ": invalid JSON: ", error.what());
  }
}

harmony::Role role_option(const std::string& value, const char* flag) {
  const auto role = harmony::parse_role(value);
  GOSSAMER_CHECK(role.has_value(), flag, " must be user, assistant, system, developer or tool, got '", value, "'");
  return *role;
}

// Token ids from a JSON array, or from the "tokens" array of an object (what `harmony render` prints).
std::vector<TokenId> read_token_ids(const std::string& path) {
  const Json parsed = parse_json(path);
  const Json* ids = &parsed;
  if (parsed.is_object()) {
    const auto tokens = parsed.find("tokens");
    GOSSAMER_CHECK(tokens != parsed.end(), path, ": expected a JSON array of token ids or an object with \"tokens\"");
    ids = &*tokens;
  }
  GOSSAMER_CHECK(ids->is_array(), path, ": expected a JSON array of token ids");
  std::vector<TokenId> out;
  for (const Json& id : *ids) {
    GOSSAMER_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX, path,
                   ": token ids must be non-negative integers, got ", id.dump());
    out.push_back(static_cast<TokenId>(id.get<int64_t>()));
  }
  return out;
}

void print_json(const Json& json) {
  std::cout << json.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
}

int run_harmony(int argc, char** argv) {
  CLI::App cli{"Harmony renderer and parser: conversation JSON <-> o200k_harmony token ids"};
  cli.require_subcommand(1);

  std::string render_input, mode = "completion", next_role = "assistant";
  bool keep_analysis = false;
  CLI::App* render = cli.add_subcommand("render", "Render a conversation to token ids: {\"tokens\", \"text\"}");
  render->add_option("--input", render_input, "conversation JSON file ('-' for stdin)")->required();
  render->add_option("--mode", mode, "completion (adds <|start|>{next-role}) | conversation | training")
      ->check(CLI::IsMember({"completion", "conversation", "training"}));
  render->add_option("--next-role", next_role, "role the model continues as (completion mode)");
  render->add_flag("--keep-analysis", keep_analysis, "keep analysis messages the reference would drop");

  std::string parse_input, role;
  bool lenient = false;
  CLI::App* parse = cli.add_subcommand("parse", "Parse token ids into messages: {\"messages\": [...]}");
  parse->add_option("--input", parse_input, "JSON array of ids, or an object with \"tokens\" ('-' for stdin)")
      ->required();
  parse->add_option("--role", role, "role hint: the ids start right after <|start|>{role} (e.g. assistant)");
  parse->add_flag("--lenient", lenient, "recover from a missing <|message|> instead of failing");

  CLI11_PARSE(cli, argc, argv);

  const auto tokenizer = text::Tokenizer::load_default();
  if (render->parsed()) {
    const harmony::Conversation conversation = harmony::conversation_from_json(parse_json(render_input));
    harmony::RenderOptions options;
    options.mode = mode == "conversation" ? harmony::RenderMode::kConversation
                   : mode == "training"   ? harmony::RenderMode::kTraining
                                          : harmony::RenderMode::kCompletion;
    options.next_role = role_option(next_role, "--next-role");
    options.auto_drop_analysis = !keep_analysis;
    const auto rendered = harmony::HarmonyRenderer(tokenizer).render(conversation, options);
    Json out = Json::object();
    out["tokens"] = rendered.tokens;
    out["text"] = rendered.text;
    print_json(out);
    return 0;
  }
  const std::vector<TokenId> ids = read_token_ids(parse_input);
  std::optional<harmony::Role> hint;
  if (!role.empty()) hint = role_option(role, "--role");
  const auto messages = harmony::parse_completion_tokens(tokenizer, ids, hint, !lenient);
  Json out = Json::object();
  out["messages"] = harmony::messages_to_json(messages);
  print_json(out);
  return 0;
}

}  // namespace

GOSSAMER_REGISTER_COMMAND("harmony", "render a conversation JSON to token ids, or parse ids into messages",
                          run_harmony);

}  // namespace gossamer::app
