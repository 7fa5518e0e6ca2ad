// Tokenizer throughput on the corpora of tokenizer_corpora.h. For each corpus, one JSON line:
//   encode_ordinary MB/s (one thread; and with --threads N the parallel encode of one long input), and where
//   the time goes: the pre-tokenizer alone (the production scanner and the PCRE2 reference), the pre-tokenizer
//   plus one rank lookup per piece (what a piece that is a whole token costs), the rest of encode (BPE merges),
//   the JSON output of `gossamer tokenize`, and decode.
//
//   gossamer_tokenizer_bench [--corpus NAME|all]... [--mb MB] [--seconds S] [--threads N] [--write-corpus DIR]
//                            [--read-corpus DIR] [--encode-only]
//
// --write-corpus writes DIR/NAME.txt for each corpus (the bytes measured), for tiktoken to run on
// (run_tokenizer_bench.sh, run_tokenizer_vs_tiktoken.sh); --read-corpus measures DIR/NAME.txt instead of
// building the corpus. --encode-only skips the breakdown (for profiling). Times are the best of several runs (wall
// clock; the machine may be shared), with the process CPU time of the same runs beside them.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/bpe.h"
#include "text/pretokenizer.h"
#include "text/pretokenizer_scan.h"
#include "text/tokenizer.h"
#include "text/tokenizer_ranks.h"
#include "tokenizer_corpora.h"

namespace {

using gossamer::text::TokenId;
using Clock = std::chrono::steady_clock;

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timing {
  double wall_s;  // best wall seconds of one run
  double cpu_s;   // least process CPU seconds of one run (steadier than wall time when the cores are shared)
};

// Runs `fn` repeatedly for at least `seconds` of wall time (and at least 3 times) after a warm-up; returns the
// fastest run (the least disturbed by other jobs on a shared machine) and the least CPU time of a run.
template <typename Fn>
Timing best_run(double seconds, Fn&& fn) {
  fn();
  Timing best{1e30, 1e30};
  const auto start = Clock::now();
  for (int runs = 0; runs < 3 || std::chrono::duration<double>(Clock::now() - start).count() < seconds; ++runs) {
    const auto t0 = Clock::now();
    const double c0 = process_cpu_seconds();
    fn();
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    best.wall_s = std::min(best.wall_s, wall);
    best.cpu_s = std::min(best.cpu_s, process_cpu_seconds() - c0);
  }
  return best;
}

struct Options {
  std::vector<std::string> corpora;
  double mb = 1.5;
  double seconds = 2.0;
  int threads = 1;
  std::string write_dir;
  std::string read_dir;
  bool encode_only = false;
};

// FNV-1a over the ids (64-bit, one step per id), so that other tokenizers can show identical output cheaply.
uint64_t ids_checksum(const std::vector<TokenId>& ids) {
  uint64_t h = 1469598103934665603ull;
  for (const TokenId id : ids) h = (h ^ static_cast<uint32_t>(id)) * 1099511628211ull;
  return h;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  GOSSAMER_CHECK(in, "cannot read ", path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void bench_corpus(const std::string& name, const Options& options, const gossamer::text::Tokenizer& tokenizer,
                  const gossamer::text::RankTable& ranks) {
  using namespace gossamer::text;
  const std::string corpus = options.read_dir.empty()
                                 ? gossamer::bench::build_corpus(name, static_cast<size_t>(options.mb * 1e6), tokenizer)
                                 : read_file(options.read_dir + "/" + name + ".txt");
  if (!options.write_dir.empty()) {
    std::ofstream(options.write_dir + "/" + name + ".txt", std::ios::binary) << corpus;
  }
  const double mb = static_cast<double>(corpus.size()) / 1e6;
  const double s = options.seconds;

  std::vector<TokenId> ids;
  const Timing encode = best_run(s, [&] { ids = tokenizer.encode_ordinary(corpus); });
  if (options.encode_only) {
    std::printf(
        "{\"corpus\": \"%s\", \"bytes\": %zu, \"tokens\": %zu, \"ids_fnv1a\": \"%016llx\", "
        "\"encode_mb_per_s\": %.2f, \"encode_cpu_mb_per_s\": %.2f}\n",
        name.c_str(), corpus.size(), ids.size(), static_cast<unsigned long long>(ids_checksum(ids)), mb / encode.wall_s,
        mb / encode.cpu_s);
    std::fflush(stdout);
    return;
  }

  size_t pieces = 0;
  const Timing scan = best_run(s / 2, [&] {
    pieces = 0;
    PieceScanner scanner(corpus);
    size_t begin = 0, end = 0;
    while (scanner.next(begin, end)) ++pieces;
  });
  const Pretokenizer regex;
  size_t regex_pieces = 0;
  const Timing pcre2 = best_run(s / 2, [&] {
    size_t pos = 0, begin = 0, end = 0;
    regex_pieces = 0;
    const auto variant = Pretokenizer::variant_for(corpus);
    while (regex.next_piece(corpus, pos, begin, end, variant)) {
      pos = end;
      ++regex_pieces;
    }
  });
  GOSSAMER_CHECK(pieces == regex_pieces, name, ": scanner and PCRE2 piece counts differ: ", pieces, " vs ",
                 regex_pieces);
  size_t whole_pieces = 0;
  const Timing lookup = best_run(s / 2, [&] {
    whole_pieces = 0;
    PieceScanner scanner(corpus);
    size_t begin = 0, end = 0;
    while (scanner.next(begin, end))
      whole_pieces += ranks.find(std::string_view(corpus).substr(begin, end - begin)) != kNoRank;
  });
  std::string json;
  const Timing output = best_run(s / 4, [&] { json = nlohmann::json(ids).dump(); });
  std::string decoded;
  const Timing decode = best_run(s / 4, [&] { decoded = tokenizer.decode_bytes(ids); });
  GOSSAMER_CHECK(decoded == corpus, name, ": decode(encode(corpus)) != corpus");

  double threaded_mb_per_s = 0, threaded_ms = 0;
  if (options.threads > 1) {
    std::vector<TokenId> parallel_ids;
    const Timing parallel =
        best_run(s, [&] { parallel_ids = tokenizer.encode_ordinary_parallel(corpus, options.threads); });
    GOSSAMER_CHECK(parallel_ids == ids, name, ": parallel encode differs from the serial one");
    threaded_mb_per_s = mb / parallel.wall_s;
    threaded_ms = parallel.wall_s * 1e3;
  }
  const auto ms = [](const Timing& t) { return t.wall_s * 1e3; };
  std::printf(
      "{\"corpus\": \"%s\", \"bytes\": %zu, \"tokens\": %zu, \"ids_fnv1a\": \"%016llx\", \"pieces\": %zu, "
      "\"whole_token_pieces\": %zu, "
      "\"encode_mb_per_s\": %.2f, \"encode_cpu_mb_per_s\": %.2f, \"scan_mb_per_s\": %.2f, \"pcre2_mb_per_s\": %.2f, "
      "\"ms\": {\"encode\": %.2f, \"scan\": %.2f, \"scan_plus_lookup\": %.2f, \"pcre2_scan\": %.2f, "
      "\"json_output\": %.2f, \"decode\": %.2f}, \"threads\": %d, \"threaded_mb_per_s\": %.2f, \"threaded_ms\": "
      "%.2f}\n",
      name.c_str(), corpus.size(), ids.size(), static_cast<unsigned long long>(ids_checksum(ids)), pieces, whole_pieces,
      mb / encode.wall_s, mb / encode.cpu_s, mb / scan.wall_s, mb / pcre2.wall_s, ms(encode), ms(scan), ms(lookup),
      ms(pcre2), ms(output), ms(decode), options.threads, threaded_mb_per_s, threaded_ms);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (std::strcmp(argv[i], "--corpus") == 0) {
      const std::string name = value();
      if (name == "all") {
        options.corpora = gossamer::bench::corpus_names();
      } else {
        options.corpora.push_back(name);
      }
    } else if (std::strcmp(argv[i], "--mb") == 0) {
      options.mb = std::stod(value());
    } else if (std::strcmp(argv[i], "--seconds") == 0) {
      options.seconds = std::stod(value());
    } else if (std::strcmp(argv[i], "--threads") == 0) {
      options.threads = std::stoi(value());
    } else if (std::strcmp(argv[i], "--write-corpus") == 0) {
      options.write_dir = value();
    } else if (std::strcmp(argv[i], "--encode-only") == 0) {
      options.encode_only = true;
    } else if (std::strcmp(argv[i], "--read-corpus") == 0) {
      options.read_dir = value();
    } else {
      std::fprintf(stderr,
                   "usage: %s [--corpus NAME|all]... [--mb MB] [--seconds S] [--threads N] [--write-corpus DIR]\n"
                   "       [--read-corpus DIR] [--encode-only]\n"
                   "corpora: multilingual english code cjk mixed\n",
                   argv[0]);
      return 2;
    }
  }
  if (options.corpora.empty()) options.corpora = gossamer::bench::corpus_names();
  try {
    const auto load_start = Clock::now();
    const auto tokenizer = gossamer::text::Tokenizer::load_default();
    std::fprintf(stderr, "tokenizer loaded in %.3f s\n",
                 std::chrono::duration<double>(Clock::now() - load_start).count());
    auto data = gossamer::text::load_o200k_base_json(std::string(GOSSAMER_SOURCE_DIR) +
                                                     "/node_modules/tiktoken/encoders/o200k_base.json");
    const gossamer::text::RankTable ranks(std::move(data.arena), std::move(data.offsets));
    for (const auto& name : options.corpora) bench_corpus(name, options, *tokenizer, ranks);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gossamer_tokenizer_bench: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
