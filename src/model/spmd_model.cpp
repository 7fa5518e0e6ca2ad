#include "model/spmd_model.h"

#include <cstring>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/log.h"

namespace gossamer::model {

namespace {

enum class Op : uint8_t { kStop = 1, kAllocate = 2, kForward = 3, kForwardSample = 4 };

class Writer {
 public:
  explicit Writer(Op op) { put(static_cast<uint8_t>(op)); }
  template <typename T>
  void put(T value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void put_ids(std::span<const int32_t> ids) {
    put(static_cast<uint32_t>(ids.size()));
    if (!ids.empty()) bytes_.append(reinterpret_cast<const char*>(ids.data()), ids.size_bytes());
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    GOSSAMER_CHECK(offset_ + sizeof(T) <= bytes_.size(), "spmd: truncated control message");
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  std::vector<int32_t> get_ids() {
    const uint32_t count = get<uint32_t>();
    GOSSAMER_CHECK(offset_ + count * sizeof(int32_t) <= bytes_.size(), "spmd: truncated control message");
    std::vector<int32_t> ids(count);
    if (count > 0) std::memcpy(ids.data(), bytes_.data() + offset_, count * sizeof(int32_t));
    offset_ += count * sizeof(int32_t);
    return ids;
  }

 private:
  const std::string& bytes_;
  size_t offset_ = 0;
};

void put_batch(Writer& out, const ForwardBatch& batch) {
  out.put(static_cast<uint32_t>(batch.sequences.size()));
  for (const SequenceInput& seq : batch.sequences) {
    out.put(seq.num_cached);
    out.put(static_cast<uint8_t>(seq.logits));
    out.put_ids(seq.tokens);
    out.put_ids(seq.block_table);
    out.put_ids(seq.sliding_block_table);
  }
}

// A decoded batch: the id arrays it owns and the ForwardBatch of spans into them.
struct OwnedBatch {
  std::vector<std::vector<int32_t>> arrays;
  ForwardBatch batch;
};

OwnedBatch get_batch(Reader& in) {
  OwnedBatch out;
  const uint32_t count = in.get<uint32_t>();
  out.arrays.reserve(static_cast<size_t>(count) * 3);  // no reallocation: the spans stay valid
  for (uint32_t s = 0; s < count; ++s) {
    SequenceInput seq;
    seq.num_cached = in.get<int32_t>();
    seq.logits = static_cast<LogitsWanted>(in.get<uint8_t>());
    out.arrays.push_back(in.get_ids());
    seq.tokens = out.arrays.back();
    out.arrays.push_back(in.get_ids());
    seq.block_table = out.arrays.back();
    out.arrays.push_back(in.get_ids());
    seq.sliding_block_table = out.arrays.back();
    out.batch.sequences.push_back(seq);
  }
  return out;
}

}  // namespace

SpmdLeader::SpmdLeader(std::unique_ptr<Model> local, std::unique_ptr<comm::TcpBootstrap> control)
    : local_(std::move(local)), control_(std::move(control)) {
  GOSSAMER_CHECK(control_->rank() == 0, "SpmdLeader runs on rank 0, not rank ", control_->rank());
}

SpmdLeader::~SpmdLeader() {
  try {
    control_->broadcast(Writer(Op::kStop).bytes(), 0);
  } catch (const std::exception&) {  // workers already gone: nothing to stop
  }
}

void SpmdLeader::allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) {
  Writer message(Op::kAllocate);
  message.put(num_blocks);
  message.put(block_size);
  message.put(num_sliding_blocks);
  control_->broadcast(message.bytes(), 0);
  local_->allocate_kv_cache(num_blocks, block_size, num_sliding_blocks);
}

void SpmdLeader::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  Writer message(Op::kForward);
  put_batch(message, batch);
  control_->broadcast(message.bytes(), 0);
  local_->forward(batch, logits);
}

void SpmdLeader::forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                std::vector<int32_t>& tokens, std::vector<RowLogprobs>& logprobs) {
  Writer message(Op::kForwardSample);
  put_batch(message, batch);
  message.put(static_cast<uint32_t>(rows.size()));
  for (const RowSampling& row : rows) {
    // NOTE: only the plain settings travel (the spans and the mask point into this process); the other
    // ranks' draws are discarded, the leader's tokens are the step's.
    RowSampling plain;
    plain.temperature = row.temperature;
    plain.top_k = row.top_k;
    plain.top_p = row.top_p;
    plain.seed = row.seed;
    message.put(plain);
  }
  control_->broadcast(message.bytes(), 0);
  local_->forward_sample(batch, rows, tokens, logprobs);
}

void run_spmd_worker(Model& local, comm::TcpBootstrap& control) {
  std::vector<float> logits;
  std::vector<int32_t> tokens;
  std::vector<RowLogprobs> logprobs;
  for (;;) {
    const std::string bytes = control.broadcast({}, 0);
    Reader in(bytes);
    const auto op = static_cast<Op>(in.get<uint8_t>());
    if (op == Op::kStop) return;
    try {
      if (op == Op::kAllocate) {
        const int32_t blocks = in.get<int32_t>(), block_size = in.get<int32_t>(), sliding = in.get<int32_t>();
        local.allocate_kv_cache(blocks, block_size, sliding);
      } else if (op == Op::kForward) {
        OwnedBatch batch = get_batch(in);
        local.forward(batch.batch, logits);
      } else if (op == Op::kForwardSample) {
        OwnedBatch batch = get_batch(in);
        std::vector<RowSampling> rows(in.get<uint32_t>());
        for (RowSampling& row : rows) row = in.get<RowSampling>();
        local.forward_sample(batch.batch, rows, tokens, logprobs);
      } else {
        GOSSAMER_THROW("spmd: unknown control op ", static_cast<int>(op));
      }
    } catch (const comm::CommError&) {
      throw;
    } catch (const Error& error) {  // the leader's own call fails the same way and reports it
      GOSSAMER_LOG_WARN("rank ", control.rank(), ": step failed: ", error.what());
    }
  }
}

}  // namespace gossamer::model
