#include "tokenizer_corpora.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "text/utf8.h"

namespace gossamer::bench {

namespace {

namespace fs = std::filesystem;

std::string read_or_empty(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The original mixed corpus (bench of commit f12355b), unchanged so that its figures stay comparable.
std::string mixed_corpus(size_t target_bytes) {
  const std::vector<std::string> prose_files = {read_or_empty("/usr/share/common-licenses/GPL-3"),
                                                read_or_empty("/usr/share/common-licenses/Apache-2.0"),
                                                read_or_empty("/usr/share/common-licenses/MPL-2.0")};
  const std::vector<std::string> code_files = {read_or_empty("/usr/include/c++/12/bits/stl_vector.h"),
                                               read_or_empty("/usr/include/c++/12/bits/basic_string.h")};
  const std::vector<std::string> multilingual = {
      "Это простой пример текста на русском языке, с числами 2026 и 3,14. ",
      "これは日本語のテキストです。東京は晴れ、気温は23度。",
      "这是一个中文句子，包含标点符号和数字１２３！",
      "هذا نص عربي للاختبار مع أرقام ٣٤٥. ",
      "यह हिंदी में एक वाक्य है। ",
      "Ελληνικά κείμενα με τόνους. ",
      "한국어 문장도 포함합니다. ",
      "Ça coûte 12,50 € — n'est-ce pas? ",
      "ภาษาไทยไม่มีช่องว่าง ",
      "Emoji 🙂👍🏽🇫🇷👨‍👩‍👧 and combining e\xCC\x81 a\xCC\x8A. ",
      "NBSP\xC2\xA0"
      "and\xE3\x80\x80"
      "ideographic space. ",
      "I'm sure you're right, we'LL see; they'VE DON'T. ",
      "getHTTPResponseCode(HTMLParser, camelCase_42);\r\n",
      "<|start|>assistant<|channel|>analysis<|message|>Let me think.<|end|>",
      "\t\tindent\twith\ttabs\r\n"};
  std::mt19937 rng(1);
  std::string corpus;
  corpus.reserve(target_bytes + 4096);
  while (corpus.size() < target_bytes) {
    const uint32_t kind = rng() % 10;
    if (kind < 6) {
      const auto& file = kind < 4 ? prose_files[rng() % prose_files.size()] : code_files[rng() % code_files.size()];
      if (file.empty()) continue;
      size_t begin = rng() % file.size();
      while (begin > 0 && file[begin - 1] != '\n') --begin;  // start at a line (ASCII files)
      corpus.append(file, begin, 512 + rng() % 2048);
    } else if (kind < 9) {
      for (uint32_t i = 0, n = 1 + rng() % 6; i < n; ++i) corpus += multilingual[rng() % multilingual.size()];
    } else {
      for (uint32_t i = 0, n = 1 + rng() % 20; i < n; ++i) corpus += std::to_string(rng()) + (rng() % 2 ? " " : ", ");
      corpus += "\n";
    }
  }
  return corpus;
}

// Regular files under `root`/`dirs` whose names end in one of `suffixes`, sorted (deterministic order).
std::vector<fs::path> list_files(const fs::path& root, const std::vector<std::string>& dirs,
                                 const std::vector<std::string>& suffixes) {
  std::vector<fs::path> files;
  for (const auto& dir : dirs) {
    std::error_code error;
    const fs::path base = root / dir;
    if (fs::is_regular_file(base, error)) {
      files.push_back(base);
      continue;
    }
    if (!fs::is_directory(base, error)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(base, error)) {
      if (!entry.is_regular_file()) continue;
      const std::string name = entry.path().filename().string();
      if (entry.path().string().find("/data/") != std::string::npos) continue;  // test data, not code
      for (const auto& suffix : suffixes) {
        if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
          files.push_back(entry.path());
          break;
        }
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Paragraphs of `text` (split at blank lines) that read as prose: no code fences or tables, mostly letters.
void append_prose_paragraphs(std::string_view text, std::vector<std::string>& out) {
  bool in_fence = false;
  std::string paragraph;
  const auto flush = [&] {
    size_t letters = 0;
    for (const char c : paragraph) letters += std::isalpha(static_cast<unsigned char>(c)) || c == ' ';
    if (paragraph.size() >= 80 && letters * 10 >= paragraph.size() * 8) out.push_back(paragraph + "\n");
    paragraph.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, 3) == "```") {
      in_fence = !in_fence;
      flush();
      continue;
    }
    if (in_fence || line.empty() || line[0] == '|') {
      flush();
      continue;
    }
    paragraph.append(line);
    paragraph += '\n';
  }
  flush();
}

std::string english_corpus(size_t target_bytes, const fs::path& repo) {
  std::vector<std::string> paragraphs;
  for (const auto& file : list_files("/usr/share/common-licenses", {"."}, {""})) {
    append_prose_paragraphs(read_or_empty(file), paragraphs);
  }
  for (const auto& file : list_files(repo, {"README.md", "docs"}, {".md"})) {
    append_prose_paragraphs(read_or_empty(file), paragraphs);
  }
  GOSSAMER_CHECK(!paragraphs.empty(), "english corpus: no prose found under ", repo.string());
  std::mt19937 rng(2);
  std::string corpus;
  while (corpus.size() < target_bytes) corpus += paragraphs[rng() % paragraphs.size()] + "\n";
  return corpus;
}

std::vector<std::string> code_files(const fs::path& repo) {
  std::vector<std::string> texts;
  for (const auto& file : list_files(repo, {"src", "apps", "tests", "bench", "tools", "scripts"},
                                     {".h", ".cpp", ".cu", ".cuh", ".py", ".mjs", ".sh", "CMakeLists.txt"})) {
    std::string text = read_or_empty(file);
    if (!text.empty() && text::utf8_valid_prefix(text) == text.size()) texts.push_back(std::move(text));
  }
  GOSSAMER_CHECK(!texts.empty(), "code corpus: no sources found under ", repo.string());
  return texts;
}

// A chunk of 1-4 KB of one source file, starting at a line.
void append_code_chunk(const std::vector<std::string>& files, std::mt19937& rng, std::string& out) {
  const std::string& file = files[rng() % files.size()];
  size_t begin = rng() % file.size();
  while (begin > 0 && file[begin - 1] != '\n') --begin;
  size_t end = std::min(file.size(), begin + 1024 + rng() % 3072);
  while (end < file.size() && file[end - 1] != '\n') ++end;  // end at a line: never cut a character
  out.append(file, begin, end - begin);
}

std::string code_corpus(size_t target_bytes, const fs::path& repo) {
  const auto files = code_files(repo);
  std::mt19937 rng(3);
  std::string corpus;
  while (corpus.size() < target_bytes) append_code_chunk(files, rng, corpus);
  return corpus;
}

// One writing system: the code point ranges of its words and how its sentences are put together.
struct Script {
  const char* name;
  std::vector<std::pair<char32_t, char32_t>> ranges;
  bool spaced;                     // words separated by spaces (else clauses of run-together words)
  const char* comma;               // clause separator
  const char* full_stop;           // sentence end
  std::vector<std::string> words;  // vocabulary tokens of this script (leading space dropped), by rank
};

std::vector<Script> all_scripts() {
  const std::vector<std::pair<char32_t, char32_t>> han = {{0x4E00, 0x9FFF}, {0x3400, 0x4DBF}};
  auto ja = han;
  ja.push_back({0x3040, 0x30FF});
  return {
      {"latin", {{'a', 'z'}, {'A', 'Z'}, {0xC0, 0x24F}, {0x1E00, 0x1EFF}}, true, ", ", ". ", {}},
      {"cyrillic", {{0x400, 0x4FF}}, true, ", ", ". ", {}},
      {"greek", {{0x370, 0x3FF}, {0x1F00, 0x1FFF}}, true, ", ", ". ", {}},
      {"arabic", {{0x600, 0x6FF}}, true, "، ", ". ", {}},
      {"hebrew", {{0x590, 0x5FF}}, true, ", ", ". ", {}},
      {"devanagari", {{0x900, 0x97F}}, true, ", ", "। ", {}},
      {"bengali", {{0x980, 0x9FF}}, true, ", ", "। ", {}},
      {"gujarati", {{0xA80, 0xAFF}}, true, ", ", ". ", {}},
      {"tamil", {{0xB80, 0xBFF}}, true, ", ", ". ", {}},
      {"telugu", {{0xC00, 0xC7F}}, true, ", ", ". ", {}},
      {"kannada", {{0xC80, 0xCFF}}, true, ", ", ". ", {}},
      {"malayalam", {{0xD00, 0xD7F}}, true, ", ", ". ", {}},
      {"sinhala", {{0xD80, 0xDFF}}, true, ", ", ". ", {}},
      {"armenian", {{0x530, 0x58F}}, true, ", ", "։ ", {}},
      {"georgian", {{0x10A0, 0x10FF}}, true, ", ", ". ", {}},
      {"hangul", {{0xAC00, 0xD7A3}}, true, ", ", ". ", {}},
      {"thai", {{0xE00, 0xE7F}}, false, " ", " ", {}},
      {"khmer", {{0x1780, 0x17FF}}, false, " ", "។ ", {}},
      {"myanmar", {{0x1000, 0x109F}}, false, "၊ ", "။ ", {}},
      {"chinese", han, false, "，", "。", {}},
      {"japanese", ja, false, "、", "。", {}},
  };
}

bool in_ranges(char32_t cp, const std::vector<std::pair<char32_t, char32_t>>& ranges) {
  for (const auto& [lo, hi] : ranges) {
    if (cp >= lo && cp <= hi) return true;
  }
  return false;
}

// Decodes valid UTF-8 into code points; false if `bytes` is not valid UTF-8.
bool decode(std::string_view bytes, std::u32string& out) {
  out.clear();
  if (text::utf8_valid_prefix(bytes) != bytes.size()) return false;
  for (size_t i = 0; i < bytes.size();) {
    const auto lead = static_cast<uint8_t>(bytes[i]);
    const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    char32_t cp = length == 1 ? lead : length == 2 ? lead & 0x1F : length == 3 ? lead & 0x0F : lead & 0x07;
    for (size_t j = 1; j < length; ++j) cp = (cp << 6) | (static_cast<uint8_t>(bytes[i + j]) & 0x3F);
    out.push_back(cp);
    i += length;
  }
  return true;
}

// Fills each script's words with the vocabulary tokens made only of its code points (one leading space
// dropped), in rank order: low ranks were merged first, so they are the frequent ones.
void collect_words(std::vector<Script>& scripts, const text::Tokenizer& tokenizer) {
  std::u32string cps;
  for (text::TokenId id = 0; id < text::kNumOrdinaryTokens; ++id) {
    std::string_view bytes = tokenizer.token_bytes(id);
    if (!bytes.empty() && bytes[0] == ' ') bytes.remove_prefix(1);
    if (bytes.empty() || !decode(bytes, cps)) continue;
    for (auto& script : scripts) {
      if (std::all_of(cps.begin(), cps.end(), [&](char32_t cp) { return in_ranges(cp, script.ranges); })) {
        script.words.emplace_back(bytes);  // a token can serve several scripts (Han: Chinese and Japanese)
      }
    }
  }
  for (const auto& script : scripts) {
    GOSSAMER_CHECK(script.words.size() >= 100, "corpus: too few vocabulary words for script ", script.name);
  }
}

// A word index with a Zipf-like (log-uniform) distribution over ranks.
size_t zipf_index(std::mt19937& rng, size_t n) {
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  return std::min(n - 1, static_cast<size_t>(std::exp(u * std::log(static_cast<double>(n)))) - 1);
}

void append_sentence(const Script& script, std::mt19937& rng, std::string& out) {
  const uint32_t clauses = 1 + rng() % 3;
  for (uint32_t c = 0; c < clauses; ++c) {
    if (c > 0) out += script.comma;
    const uint32_t words = 2 + rng() % (script.spaced ? 8 : 14);
    for (uint32_t w = 0; w < words; ++w) {
      if (script.spaced && w > 0) out += ' ';
      const uint32_t parts = rng() % 10 < 7 ? 1 : rng() % 4 < 3 ? 2 : 3;  // inflected and compound words
      for (uint32_t p = 0; p < parts; ++p) out += script.words[zipf_index(rng, script.words.size())];
    }
  }
  out += script.full_stop;
}

std::string emoji(std::mt19937& rng) {
  std::string out;
  switch (rng() % 4) {
    case 0: text::append_utf8(out, 0x1F600 + rng() % 0x50); break;
    case 1:
      text::append_utf8(out, 0x1F440 + rng() % 0x10);
      text::append_utf8(out, 0x1F3FB + rng() % 5);  // skin tone
      break;
    case 2:  // a flag: two regional indicators
      text::append_utf8(out, 0x1F1E6 + rng() % 26);
      text::append_utf8(out, 0x1F1E6 + rng() % 26);
      break;
    default:  // a ZWJ family
      text::append_utf8(out, 0x1F468);
      out += "\xE2\x80\x8D";
      text::append_utf8(out, 0x1F469);
      out += "\xE2\x80\x8D";
      text::append_utf8(out, 0x1F466 + rng() % 2);
      break;
  }
  return out;
}

std::string numbers(std::mt19937& rng) {
  std::string out;
  for (uint32_t i = 0, n = 1 + rng() % 8; i < n; ++i) {
    switch (rng() % 4) {
      case 0: out += std::to_string(rng()); break;
      case 1: out += std::to_string(rng() % 1000) + "." + std::to_string(rng() % 100); break;
      case 2: out += "20" + std::to_string(10 + rng() % 20) + "-0" + std::to_string(1 + rng() % 9); break;
      default: out += std::to_string(rng() % 100) + "%"; break;
    }
    out += rng() % 2 ? " " : ", ";
  }
  return out;
}

// Paragraphs of sentences in scripts picked with `weights` (parallel to `scripts`); with `extras`, also
// emoji, numbers and code chunks.
std::string synthetic_corpus(size_t target_bytes, const std::vector<Script>& scripts, const std::vector<int>& weights,
                             const std::vector<std::string>* code, uint32_t seed) {
  std::mt19937 rng(seed);
  std::discrete_distribution<size_t> pick_script(weights.begin(), weights.end());
  std::string corpus;
  corpus.reserve(target_bytes + 8192);
  while (corpus.size() < target_bytes) {
    const uint32_t kind = rng() % 20;
    if (code != nullptr && kind == 0) {
      append_code_chunk(*code, rng, corpus);
      continue;
    }
    const Script& script = scripts[pick_script(rng)];
    for (uint32_t s = 0, n = 1 + rng() % 6; s < n; ++s) {
      append_sentence(script, rng, corpus);
      if (code != nullptr && rng() % 8 == 0) corpus += emoji(rng) + " ";
      if (code != nullptr && rng() % 10 == 0) corpus += numbers(rng);
    }
    corpus += rng() % 3 ? "\n\n" : "\n";
  }
  return corpus;
}

}  // namespace

std::string build_corpus(std::string_view name, size_t target_bytes, const text::Tokenizer& tokenizer) {
  const fs::path repo = GOSSAMER_SOURCE_DIR;
  if (name == "mixed") return mixed_corpus(target_bytes);
  if (name == "english") return english_corpus(target_bytes, repo);
  if (name == "code") return code_corpus(target_bytes, repo);
  GOSSAMER_CHECK(name == "cjk" || name == "multilingual", "unknown corpus '", name, "'");
  std::vector<Script> scripts = all_scripts();
  collect_words(scripts, tokenizer);
  if (name == "cjk") {
    std::vector<int> weights(scripts.size(), 0);
    for (size_t i = 0; i < scripts.size(); ++i) {
      const std::string_view script = scripts[i].name;
      weights[i] = script == "chinese" ? 5 : script == "japanese" ? 3 : script == "hangul" ? 2 : 0;
    }
    return synthetic_corpus(target_bytes, scripts, weights, nullptr, 4);
  }
  // multilingual: Latin (English and accented European words) a third, the rest spread over the scripts.
  std::vector<int> weights(scripts.size(), 3);
  weights[0] = 24;
  const auto code = code_files(repo);
  return synthetic_corpus(target_bytes, scripts, weights, &code, 5);
}

}  // namespace gossamer::bench
