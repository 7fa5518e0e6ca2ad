// Tokenizer throughput on a ~1.5 MB mixed corpus (English prose, C++ code, many scripts, emoji, numbers,
// CRLF/tab/NBSP whitespace, contractions, Harmony tags). Reports MB/s of encode_ordinary, of the
// pre-tokenizer alone, and of decode. bench/text/run_tokenizer_bench.sh runs npm tiktoken on the same corpus.
//
//   gossamer_tokenizer_bench [--write-corpus PATH] [--seconds S] [--threads N]
//
// The corpus is deterministic: fixed system text files (Debian 12) mixed by a seeded std::mt19937.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "text/pretokenizer.h"
#include "text/tokenizer.h"

namespace {

using gossamer::text::TokenId;
using Clock = std::chrono::steady_clock;

std::string read_or_empty(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string build_corpus(size_t target_bytes) {
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

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timing {
  double wall_s;  // mean wall seconds per run
  double cpu_s;   // mean process CPU seconds per run (robust when other jobs share the cores)
};

// Runs `fn` repeatedly for at least `seconds` of wall time (and 3 times); returns the mean per run.
template <typename Fn>
Timing time_per_run(double seconds, Fn&& fn) {
  fn();  // warm-up
  int runs = 0;
  const auto start = Clock::now();
  const double cpu_start = process_cpu_seconds();
  double elapsed = 0;
  while (elapsed < seconds || runs < 3) {
    fn();
    ++runs;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return {elapsed / runs, (process_cpu_seconds() - cpu_start) / runs};
}

}  // namespace

int main(int argc, char** argv) {
  std::string corpus_out;
  double seconds = 3.0;
  int threads = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--write-corpus") == 0 && i + 1 < argc) {
      corpus_out = argv[++i];
    } else if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::stod(argv[++i]);
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::stoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--write-corpus PATH] [--seconds S] [--threads N]\n", argv[0]);
      return 2;
    }
  }
  try {
    const std::string corpus = build_corpus(1500 * 1000);
    if (!corpus_out.empty()) {
      std::ofstream(corpus_out, std::ios::binary) << corpus;
    }
    const auto load_start = Clock::now();
    const auto tokenizer = gossamer::text::Tokenizer::load_default();
    const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
    const double mb = static_cast<double>(corpus.size()) / 1e6;

    std::vector<TokenId> ids;
    const Timing encode = time_per_run(seconds, [&] { ids = tokenizer->encode_ordinary(corpus); });

    const gossamer::text::Pretokenizer pretokenizer;
    size_t num_pieces = 0;
    const Timing split = time_per_run(seconds / 2, [&] {
      size_t pos = 0, begin = 0, end = 0;
      num_pieces = 0;
      const auto variant = gossamer::text::Pretokenizer::variant_for(corpus);
      while (pretokenizer.next_piece(corpus, pos, begin, end, variant)) {
        pos = end;
        ++num_pieces;
      }
    });
    std::string decoded;
    const Timing decode = time_per_run(seconds / 2, [&] { decoded = tokenizer->decode_bytes(ids); });
    GOSSAMER_CHECK(decoded == corpus, "decode(encode(corpus)) != corpus");

    double threaded_mb_per_s = 0;
    if (threads > 1) {
      const double wall = time_per_run(seconds, [&] {
                            std::vector<std::thread> pool;
                            for (int t = 0; t < threads; ++t)
                              pool.emplace_back([&] { (void)tokenizer->encode_ordinary(corpus); });
                            for (auto& thread : pool) thread.join();
                          }).wall_s;
      threaded_mb_per_s = mb * threads / wall;
    }
    std::printf(
        "{\"bytes\": %zu, \"tokens\": %zu, \"pieces\": %zu, \"load_s\": %.3f, \"encode_mb_per_s\": %.2f, "
        "\"encode_cpu_mb_per_s\": %.2f, \"pretokenize_mb_per_s\": %.2f, \"pretokenize_cpu_mb_per_s\": %.2f, "
        "\"decode_mb_per_s\": %.2f, \"threads\": %d, \"threaded_mb_per_s\": %.2f}\n",
        corpus.size(), ids.size(), num_pieces, load_seconds, mb / encode.wall_s, mb / encode.cpu_s, mb / split.wall_s,
        mb / split.cpu_s, mb / decode.wall_s, threads, threaded_mb_per_s);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gossamer_tokenizer_bench: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
