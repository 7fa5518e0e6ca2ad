#include "bench_step_engine.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "bench_setup.h"
#include "core/error.h"
#include "engine/engine.h"

namespace gossamer::app {

namespace {

using Clock = std::chrono::steady_clock;

struct ForwardStamp {
  Clock::time_point start, end;
};

// Forwards every call to a model it does not own and stamps each forward (engine thread only). Not
// overlapped: the engine's launch_step/wait_step go through the synchronous default, which runs forward()
// or forward_sample() below; overlapped: they go to the model, and a forward is launch → wait's end.
class ProbeModel final : public model::Model {
 public:
  ProbeModel(model::Model& inner, std::vector<ForwardStamp>& stamps, bool overlapped)
      : inner_(inner), stamps_(stamps), overlapped_(overlapped) {}
  const model::GptOssConfig& config() const override { return inner_.config(); }
  std::string backend_name() const override { return inner_.backend_name(); }
  std::string parallel_layout() const override { return inner_.parallel_layout(); }
  int32_t kv_num_blocks() const override { return inner_.kv_num_blocks(); }
  int32_t kv_num_sliding_blocks() const override { return inner_.kv_num_sliding_blocks(); }
  int32_t kv_block_size() const override { return inner_.kv_block_size(); }
  int64_t kv_bytes_per_block() const override { return inner_.kv_bytes_per_block(); }
  int64_t kv_bytes_per_token() const override { return inner_.kv_bytes_per_token(); }
  int64_t kv_layer_bytes_per_token(bool sliding) const override { return inner_.kv_layer_bytes_per_token(sliding); }
  std::string kv_cache_dtype_name() const override { return inner_.kv_cache_dtype_name(); }
  bool samples_on_device() const override { return inner_.samples_on_device(); }
  bool samples_with_token_masks() const override { return inner_.samples_with_token_masks(); }
  uint64_t weight_bytes() const override { return inner_.weight_bytes(); }
  void forward(const model::ForwardBatch& batch, std::vector<float>& logits) override {
    const auto start = Clock::now();
    inner_.forward(batch, logits);
    stamps_.push_back({start, Clock::now()});
  }
  using model::Model::forward_sample;
  void forward_sample(const model::ForwardBatch& batch, std::span<const model::RowSampling> rows,
                      std::vector<int32_t>& tokens, std::vector<model::RowLogprobs>& logprobs) override {
    const auto start = Clock::now();
    inner_.forward_sample(batch, rows, tokens, logprobs);
    stamps_.push_back({start, Clock::now()});
  }
  void launch_step(const model::ForwardBatch& batch, std::optional<std::span<const model::RowSampling>> rows) override {
    if (!overlapped_) return model::Model::launch_step(batch, rows);
    launch_start_ = Clock::now();
    inner_.launch_step(batch, rows);
  }
  void launch_forward(const model::ForwardBatch& batch) override {
    if (!overlapped_) return model::Model::launch_forward(batch);
    launch_start_ = Clock::now();
    inner_.launch_forward(batch);
  }
  void launch_sampling(std::span<const model::RowSampling> rows) override {
    if (!overlapped_) return model::Model::launch_sampling(rows);
    inner_.launch_sampling(rows);
  }
  void wait_step(model::StepResult& result) override {
    if (!overlapped_) return model::Model::wait_step(result);
    inner_.wait_step(result);
    stamps_.push_back({launch_start_, Clock::now()});
  }

 protected:
  void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) override {
    inner_.allocate_kv_cache(num_blocks, block_size, num_sliding_blocks);
  }

 private:
  model::Model& inner_;
  std::vector<ForwardStamp>& stamps_;
  const bool overlapped_;
  Clock::time_point launch_start_;
};

struct StepStamp {
  engine::StepInfo info;
  Clock::time_point end;
  size_t forwards = 0;  // forwards stamped when the step ended
};

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

EngineStepTimes measure_engine_steps(model::Model& model, int32_t batch, int32_t prompt_len, int warmup, int steps,
                                     uint64_t seed, bool overlapped, const ConstraintFactory& make_constraint) {
  GOSSAMER_CHECK(batch >= 1 && prompt_len >= 1 && warmup >= 0 && steps >= 1, "engine steps: batch ", batch, ", prompt ",
                 prompt_len, ", steps ", steps);
  std::vector<ForwardStamp> forwards;
  std::vector<StepStamp> step_stamps;
  engine::EngineConfig config;
  config.max_num_seqs = batch;
  config.max_num_batched_tokens = std::max(2048, batch * prompt_len);  // the prompts in one step or a few
  const int32_t total = prompt_len + warmup + steps + 2;
  config.max_model_len = std::min(model.config().max_position_embeddings, total + kBenchBlockSize);
  config.num_kv_blocks = batch * ((config.max_model_len + kBenchBlockSize - 1) / kBenchBlockSize) + 1;
  config.block_size = kBenchBlockSize;
  config.enable_prefix_caching = false;
  config.max_queued_requests = batch;  // every request is submitted at once
  std::mutex mutex;
  std::condition_variable done;
  int finished = 0;
  {
    engine::Engine engine(std::make_unique<ProbeModel>(model, forwards, overlapped), config,
                          [&](const engine::StepInfo& info) {
                            step_stamps.push_back({info, Clock::now(), forwards.size()});
                          });
    for (int32_t i = 0; i < batch; ++i) {
      engine::SubmitParams params;
      params.prompt =
          bench_random_tokens(seed + 7919 * static_cast<uint64_t>(i), prompt_len, model.config().vocab_size);
      params.sampling.temperature = 0.0f;
      params.sampling.max_tokens = warmup + steps + 2;  // the prefill draws the first; the last decode step has no next
      params.sampling.ignore_eos = true;
      if (make_constraint) params.sampling.constraint = make_constraint();
      params.on_output = [&](const engine::RequestOutput& output) {
        if (!output.finished) return;
        std::lock_guard<std::mutex> lock(mutex);
        ++finished;
        done.notify_one();
      };
      engine.submit(std::move(params));
    }
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return finished == batch; });
  }  // the engine thread is joined here: the stamps are complete
  EngineStepTimes out;
  int decode_steps = 0;
  for (size_t s = 0; s < step_stamps.size(); ++s) {
    const StepStamp& stamp = step_stamps[s];
    const bool pure_decode = stamp.info.num_sequences == batch && stamp.info.num_tokens == batch && stamp.forwards >= 1;
    if (!pure_decode || decode_steps++ < warmup || s + 1 >= step_stamps.size()) continue;
    const ForwardStamp& forward = forwards[stamp.forwards - 1];
    const auto start =
        stamp.end - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(stamp.info.seconds));
    const StepStamp& next = step_stamps[s + 1];
    const auto next_start =
        next.end - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(next.info.seconds));
    out.before_forward += seconds(start, forward.start);
    out.forward += seconds(forward.start, forward.end);
    out.after_forward += seconds(forward.end, stamp.end);
    out.between_steps += seconds(stamp.end, next_start);
    out.step += stamp.info.seconds;
    out.token_masks += stamp.info.token_mask_seconds;
    out.period += seconds(stamp.end, next.end);
    ++out.timed_steps;
  }
  GOSSAMER_CHECK(out.timed_steps >= 1, "engine steps: no pure decode step of batch ", batch, " after ", warmup,
                 " warm-up steps (", step_stamps.size(), " steps ran)");
  for (double* value : {&out.before_forward, &out.forward, &out.after_forward, &out.between_steps, &out.step,
                        &out.period, &out.token_masks}) {
    *value /= out.timed_steps;
  }
  return out;
}

}  // namespace gossamer::app
