#include "bench_sweep_table.h"

#include <fstream>
#include <map>

#include "core/error.h"

namespace gossamer::app {

namespace {
bool is(const SweepRow& row, SweepRow::Kind kind) {
  return row.kind == kind;
}

std::string csv_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

std::vector<CostSeries> decode_cost_series(const std::vector<SweepRow>& rows, int64_t context) {
  std::map<std::string, CostSeries> by_layout;
  for (const SweepRow& row : rows) {
    if (!is(row, SweepRow::Kind::kDecode) || row.tokens != context || !row.skipped.empty()) continue;
    CostSeries& series = by_layout[row.layout.describe_with_dp()];
    series.label = row.layout.describe_with_dp();
    series.tokens_per_s_per_seq.push_back(row.tokens_per_s_per_seq());
    series.dollars_per_million.push_back(row.dollars_per_million());
    series.batch.push_back(row.batch);
  }
  std::vector<CostSeries> out;
  for (auto& [label, series] : by_layout) out.push_back(std::move(series));
  return out;
}

void print_prefill_table(std::FILE* out, const std::string& model, const std::vector<SweepRow>& rows) {
  std::fprintf(
      out,
      "\nPrefill, batch 1 (%s)\n\n| layout | GPUs | input tokens | latency (s) | tokens/s | $ / 1M input tokens |\n"
      "|---|---|---|---|---|---|\n",
      model.c_str());
  for (const SweepRow& row : rows) {
    if (!is(row, SweepRow::Kind::kPrefill)) continue;
    if (!row.skipped.empty()) {
      std::fprintf(out, "| %s | %d | %lld | skipped: %s | | |\n", row.layout.describe_with_dp().c_str(), row.gpus(),
                   static_cast<long long>(row.tokens), row.skipped.c_str());
      continue;
    }
    std::fprintf(out, "| %s | %d | %lld | %.3f | %.0f | %.4f |\n", row.layout.describe_with_dp().c_str(), row.gpus(),
                 static_cast<long long>(row.tokens), row.seconds, row.tokens_per_s_total(), row.dollars_per_million());
  }
}

void print_decode_table(std::FILE* out, const std::string& model, const std::vector<SweepRow>& rows) {
  std::fprintf(out,
               "\nDecode (%s)\n\n| layout | GPUs | context | batch | step (ms) | tok/s per seq | tok/s total | "
               "$ / 1M output tokens | source |\n|---|---|---|---|---|---|---|---|---|\n",
               model.c_str());
  for (const SweepRow& row : rows) {
    if (!is(row, SweepRow::Kind::kDecode)) continue;
    if (!row.skipped.empty()) {
      std::fprintf(out, "| %s | %d | %lld | %d | skipped: %s | | | | |\n", row.layout.describe_with_dp().c_str(),
                   row.gpus(), static_cast<long long>(row.tokens), row.batch, row.skipped.c_str());
      continue;
    }
    std::fprintf(out, "| %s | %d | %lld | %d | %.2f | %.1f | %.0f | %.3f | %s |\n",
                 row.layout.describe_with_dp().c_str(), row.gpus(), static_cast<long long>(row.tokens), row.batch,
                 row.seconds * 1e3, row.tokens_per_s_per_seq(), row.tokens_per_s_total(), row.dollars_per_million(),
                 row.source.c_str());
  }
}

void print_best_decode_table(std::FILE* out, const std::vector<SweepRow>& rows) {
  std::map<std::pair<int64_t, int32_t>, const SweepRow*> best;
  for (const SweepRow& row : rows) {
    if (!is(row, SweepRow::Kind::kDecode) || !row.skipped.empty()) continue;
    const SweepRow*& slot = best[{row.tokens, row.batch}];
    if (slot == nullptr || row.dollars_per_million() < slot->dollars_per_million()) slot = &row;
  }
  std::fprintf(out,
               "\nCheapest decode layout per context and batch\n\n| context | batch | layout | tok/s per seq | "
               "$ / 1M output tokens |\n|---|---|---|---|---|\n");
  for (const auto& [key, row] : best) {
    std::fprintf(out, "| %lld | %d | %s | %.1f | %.3f |\n", static_cast<long long>(key.first), key.second,
                 row->layout.describe_with_dp().c_str(), row->tokens_per_s_per_seq(), row->dollars_per_million());
  }
}

void write_sweep_csv(const std::string& path, const std::vector<SweepRow>& rows) {
  std::ofstream out(path);
  GOSSAMER_CHECK(out.good(), "cannot write the sweep CSV '", path, "'");
  out << "kind,layout,tp,ep,dp,gpus,tokens,batch,seconds,tokens_per_s_per_seq,tokens_per_s_total,dollars_per_million,"
         "source,skipped\n";
  for (const SweepRow& row : rows) {
    const bool ran = row.skipped.empty();
    out << (is(row, SweepRow::Kind::kPrefill) ? "prefill" : "decode") << "," << row.layout.describe_with_dp() << ","
        << row.layout.tensor_parallel << "," << (row.layout.expert_parallel ? row.layout.tensor_parallel : 1) << ","
        << row.layout.data_parallel << "," << row.gpus() << "," << row.tokens << "," << row.batch << ","
        << (ran ? std::to_string(row.seconds) : "") << "," << (ran ? std::to_string(row.tokens_per_s_per_seq()) : "")
        << "," << (ran ? std::to_string(row.tokens_per_s_total()) : "") << ","
        << (ran ? std::to_string(row.dollars_per_million()) : "") << "," << row.source << "," << csv_quoted(row.skipped)
        << "\n";
  }
}

}  // namespace gossamer::app
