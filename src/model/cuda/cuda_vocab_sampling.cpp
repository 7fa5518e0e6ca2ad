// The cuda backend's sampling over vocab-parallel logits (CudaModel::sample_vocab_slices): the launches of
// kernels/vocab_sampling.h, then kernels/vocab_logprobs.h, on this rank's slice, with the group summing their
// small f32 records between them (all_reduce: NCCL, or the IPC one-shot on groups without NCCL). Enqueued on
// stream_, no synchronisation; every rank enqueues the same sequence for the same rows.
#include <algorithm>

#include "kernels/vocab_logprobs.h"
#include "kernels/vocab_sampling.h"
#include "model/cuda/cuda_model.h"

namespace gossamer::model::cuda {

namespace {

// f32 words, rounded up to whole 16-byte groups (the IPC all-reduce's unit).
int64_t padded_words(int64_t count) {
  return (count + 3) / 4 * 4;
}

}  // namespace

void CudaModel::sample_vocab_slices(int num_rows, const VocabSampledRows& rows) {
  comm::Communicator& comm = *options_.comm;
  const int world = comm.world_size();
  const int num_k = static_cast<int>(rows.num_k), num_p = static_cast<int>(rows.num_p),
            num_s = static_cast<int>(rows.num_s);
  // ---- the exchange buffer: [records | state | hist | masses | picks | logprob records], 16-byte aligned ----
  size_t bytes = 0;
  const auto place = [&](int64_t words) {
    const size_t at = bytes;
    bytes += static_cast<size_t>(padded_words(words)) * 4;
    return at;
  };
  const int64_t record_words = int64_t{world} * num_rows * kernels::kVocabMaxRecord;
  const size_t at_records = place(record_words);
  const size_t at_state = place(int64_t{num_rows} * sizeof(kernels::VocabRowState) / 4);
  const int64_t hist_words = int64_t{std::max(num_k, num_p)} * kernels::kVocabSelectBins;
  const size_t at_hist = place(hist_words);
  const int64_t mass_words = int64_t{world} * std::max(num_p, num_s);
  const size_t at_masses = place(mass_words);
  const int64_t pick_words = int64_t{world} * num_s * 2;
  const size_t at_picks = place(pick_words);
  const int64_t logprob_words = rows.num_top != nullptr ? int64_t{world} * num_rows * kernels::kVocabLogprobRecord : 0;
  const size_t at_logprobs = place(logprob_words);
  if (bytes > vocab_exchange_.bytes()) vocab_exchange_.ensure(std::max(bytes, vocab_exchange_.bytes() * 5 / 4));
  auto* base = vocab_exchange_.get<uint8_t>();
  auto* records = reinterpret_cast<float*>(base + at_records);               // [world, rows, 3] f32
  auto* state = reinterpret_cast<kernels::VocabRowState*>(base + at_state);  // [rows]
  auto* hist = reinterpret_cast<float*>(base + at_hist);                     // [selected rows, 256] f32
  auto* masses = reinterpret_cast<float*>(base + at_masses);                 // [world, selected rows] f32
  auto* picks = reinterpret_cast<float*>(base + at_picks);                   // [world, drawn rows, 2] f32
  auto* logprob_records = reinterpret_cast<float*>(base + at_logprobs);      // [world, rows, 43] f32
  const auto sum = [&](float* data, int64_t words) {
    if (words > 0) comm.all_reduce(data, padded_words(words), DType::kF32, comm::ReduceOp::kSum, stream_);
  };

  kernels::VocabSliceParams slice;
  slice.logits = vocab_local_.get<uint16_t>();  // [rows, local vocab] bf16
  slice.ld = weights_.unembedding.n;
  slice.num_cols = static_cast<int>(weights_.unembedding.n);
  slice.vocab_begin = static_cast<int>(vocab_begin());
  slice.rank = comm.rank();
  slice.world = world;
  slice.num_rows = num_rows;
  slice.temperature = rows.temperature;

  // ---- 0. penalties: the penalized rows' f32 slice copies, read by every launch below ----
  if (rows.penalty_offsets != nullptr && rows.num_penalized > 0) {
    const size_t copy_bytes = static_cast<size_t>(rows.num_penalized) * static_cast<size_t>(slice.num_cols) * 4;
    GOSSAMER_CHECK(penalized_.bytes() >= copy_bytes, "sample_vocab_slices: penalized_ holds ", penalized_.bytes(),
                   " bytes, the step's slice copies need ", copy_bytes);
    slice.penalized = penalized_.get<float>();  // [penalized rows, local vocab] f32
    slice.penalized_rows = rows.penalized_rows;
    kernels::VocabPenaltyParams pen;
    pen.offsets = rows.penalty_offsets;
    pen.tokens = rows.penalty_tokens;
    pen.counts = rows.penalty_counts;
    pen.presence = rows.presence;
    pen.frequency = rows.frequency;
    pen.repetition = rows.repetition;
    pen.out = penalized_.get<float>();
    kernels::launch_vocab_penalize(slice, pen, stream_);
  }

  // ---- 1. argmax over the group: every greedy row is done here ----
  kernels::launch_vocab_local_max(slice, records, stream_);
  sum(records, record_words);
  kernels::launch_vocab_merge_max(records, world, num_rows, rows.tokens, state, stream_);

  // ---- 2./3. the top-k, then the top-p thresholds: 4 radix rounds each over summed histograms ----
  const auto select = [&](kernels::VocabSelect what, const int32_t* which, int count) {
    kernels::VocabSelectParams s;
    s.what = what;
    s.rows = which;
    s.num_select = count;
    s.top_k = rows.top_k;
    s.top_p = rows.top_p;
    s.masses = masses;
    s.state = state;
    s.hist = hist;
    for (int shift = 24; shift >= 0; shift -= 8) {
      s.shift = shift;
      kernels::launch_vocab_select_round(slice, s, stream_);
      sum(hist, int64_t{count} * kernels::kVocabSelectBins);
    }
    s.shift = -8;
    kernels::launch_vocab_select_round(slice, s, stream_);
  };
  if (num_k > 0) select(kernels::VocabSelect::kTopK, rows.k_rows, num_k);
  if (num_p > 0) {
    kernels::launch_vocab_local_mass(slice, rows.p_rows, num_p, state, masses, stream_);  // of the top-k set
    sum(masses, int64_t{world} * num_p);
    select(kernels::VocabSelect::kTopP, rows.p_rows, num_p);
  }
  // ---- 4. the draw: kept masses per rank, the walk, the first crossing ----
  if (num_s > 0) {
    kernels::launch_vocab_local_mass(slice, rows.s_rows, num_s, state, masses, stream_);
    sum(masses, int64_t{world} * num_s);
    kernels::launch_vocab_local_draw(slice, rows.s_rows, num_s, state, masses, rows.seeds, picks, stream_);
    sum(picks, pick_words);
    kernels::launch_vocab_merge_draw(picks, world, rows.s_rows, num_s, rows.tokens, stream_);
  }
  // ---- 5. raw logprobs of the drawn tokens (the masked bf16 slice, not the penalized copies) ----
  if (rows.num_top == nullptr) return;
  kernels::launch_vocab_logprob_record(slice, rows.tokens, rows.num_top, logprob_records, stream_);
  sum(logprob_records, logprob_words);
  kernels::launch_vocab_merge_logprobs(logprob_records, world, num_rows, rows.num_top, rows.out_logprobs,
                                       rows.out_top_tokens, rows.out_top_logprobs, stream_);
}

}  // namespace gossamer::model::cuda
