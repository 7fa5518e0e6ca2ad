// tools/tiny_corpus.py and tools/tiny_render (docs/tiny-model.md): the corpus is deterministic for a seed,
// held-out templates never occur in the training split, and the rendered ids join the server's prompt
// (ending in <|start|>assistant) with a completion that ends where the model must stop.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/mapped_file.h"

namespace {

namespace fs = std::filesystem;

const fs::path kSource = GOSSAMER_SOURCE_DIR;
const fs::path kRender = fs::path(GOSSAMER_BINARY).parent_path() / "tools" / "tiny_render";

fs::path scratch() {
  const fs::path dir = fs::temp_directory_path() / ("gossamer_tiny_corpus." + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string generate(const fs::path& out, int seed) {
  const std::string command = "python3 '" + (kSource / "tools" / "tiny_corpus.py").string() + "' --seed " +
                              std::to_string(seed) + " --train 300 --eval 30 --out '" + out.string() + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command << " (python3 is needed: scripts/setup.sh)";
  return gossamer::read_text_file(out.string());
}

std::vector<nlohmann::json> lines_of(const std::string& text) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

TEST(TinyCorpus, DeterministicForASeedWithDisjointHeldOutTemplates) {
  const fs::path dir = scratch();
  const std::string a = generate(dir / "a.jsonl", 3), b = generate(dir / "b.jsonl", 3),
                    c = generate(dir / "c.jsonl", 4);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const auto rows = lines_of(a);
  ASSERT_EQ(rows.size(), 330u);
  std::set<std::string> train, eval;
  for (const auto& row : rows) (row["split"] == "train" ? train : eval).insert(row["template"].get<std::string>());
  EXPECT_GT(eval.size(), 5u);
  for (const auto& t : eval) {
    EXPECT_EQ(train.count(t), 0u) << t;
    EXPECT_FALSE(t.ends_with("||")) << "a held-out template without prefix and suffix: " << t;
  }
  fs::remove_all(dir);
}

// The arithmetic analyses (tools/tiny_corpus_arith.py) work column by column on numbers below 1000, each one
// o200k token, and the final answer is right and is the last partial result ("so far 42").
TEST(TinyCorpus, ArithmeticIsColumnByColumnOnOneTokenNumbers) {
  const fs::path dir = scratch();
  const auto rows = lines_of(generate(dir / "corpus.jsonl", 6));
  const std::regex answer(R"(^(\d+) ([+-]) (\d+) = (\d+)\.$)"), run(R"(\d+)");
  int checked = 0;
  for (const auto& row : rows) {
    const std::string domain = row["domain"];
    if (domain != "add" && domain != "sub" && domain != "followup") continue;
    const std::string analysis = row["completion"][0]["content"], final_answer = row["completion"][1]["content"];
    std::smatch m;
    ASSERT_TRUE(std::regex_match(final_answer, m, answer)) << final_answer;
    const int a = std::stoi(m[1]), b = std::stoi(m[3]), c = std::stoi(m[4]);
    EXPECT_EQ(c, m[2] == "+" ? a + b : a - b) << final_answer;
    EXPECT_LT(std::max({a, b, c}), 1000) << final_answer;
    EXPECT_NE(analysis.find("Ones: "), std::string::npos) << analysis;
    const bool stripped = analysis.find(", which is " + std::to_string(c) + ".") != std::string::npos;
    EXPECT_TRUE(stripped || analysis.find("so far " + std::to_string(c) + ".") != std::string::npos) << analysis;
    for (auto it = std::sregex_iterator(analysis.begin(), analysis.end(), run); it != std::sregex_iterator(); ++it) {
      EXPECT_LE(it->length(), 3) << "a number of more than 3 digits is 2 o200k tokens: " << analysis;
    }
    ++checked;
  }
  EXPECT_GT(checked, 100);
  fs::remove_all(dir);
}

TEST(TinyCorpus, RenderJoinsPromptAndCompletion) {
  const fs::path dir = scratch();
  const auto rows = lines_of(generate(dir / "corpus.jsonl", 5));
  std::ostringstream command_line;  // (not operator+: GCC 12 warns falsely about the inlined copies)
  command_line << "'" << kRender.string() << "' '" << (dir / "corpus.jsonl").string() << "' '"
               << (dir / "corpus.bin").string() << "'";
  const std::string command = command_line.str();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string bytes = gossamer::read_text_file((dir / "corpus.bin").string());
  ASSERT_EQ(bytes.size() % 4, 0u);
  std::vector<uint32_t> ids(bytes.size() / 4);
  std::memcpy(ids.data(), bytes.data(), bytes.size());
  constexpr uint32_t kStart = 200006, kReturn = 200002, kCall = 200012;
  size_t at = 0, count = 0;
  while (at < ids.size()) {
    ASSERT_LT(count, rows.size());
    const uint32_t split = ids[at], prompt = ids[at + 1], completion = ids[at + 2];
    at += 3;
    ASSERT_LE(at + prompt + completion, ids.size());
    EXPECT_EQ(split, rows[count]["split"] == "eval" ? 1u : 0u);
    EXPECT_EQ(ids[at + prompt - 2], kStart) << "conversation " << count;
    const bool call = rows[count]["completion"].back().contains("recipient");
    EXPECT_EQ(ids[at + prompt + completion - 1], call ? kCall : kReturn) << "conversation " << count;
    at += prompt + completion;
    ++count;
  }
  EXPECT_EQ(count, rows.size());
  fs::remove_all(dir);
}

}  // namespace
