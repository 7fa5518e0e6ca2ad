// SpmdLeader / run_spmd_worker (model/spmd_model.h) on localhost: workers replay exactly the leader's
// calls, the leader's results are its own model's, a failing call fails alike everywhere without
// breaking the group, the leader's end stops the workers, and a vanished worker is named.
#include "model/spmd_model.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "comm/communicator.h"
#include "model/cpu_model.h"
#include "model/dummy_checkpoint.h"
#include "model/sequence_runner.h"

namespace gossamer::model {
namespace {

// Forwards to a CpuModel and records what it was asked to run.
class RecordingModel final : public Model {
 public:
  explicit RecordingModel(std::unique_ptr<Model> inner) : inner_(std::move(inner)) {}
  const GptOssConfig& config() const override { return inner_->config(); }
  std::string backend_name() const override { return inner_->backend_name(); }
  int32_t kv_num_blocks() const override { return inner_->kv_num_blocks(); }
  int32_t kv_block_size() const override { return inner_->kv_block_size(); }
  int64_t kv_bytes_per_block() const override { return inner_->kv_bytes_per_block(); }
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override {
    for (const SequenceInput& seq : batch.sequences) {
      calls.push_back({seq.tokens.begin(), seq.tokens.end()});
      calls.back().push_back(seq.num_cached);
      calls.back().insert(calls.back().end(), seq.block_table.begin(), seq.block_table.end());
    }
    inner_->forward(batch, logits);
    last_logits = logits;
  }
  std::vector<std::vector<int32_t>> calls;  // per sequence of every forward: tokens, num_cached, block table
  std::vector<float> last_logits;
  int allocations = 0;

 protected:
  void allocate_kv_cache_impl(int32_t num_blocks, int32_t block_size, int32_t num_sliding_blocks) override {
    ++allocations;
    inner_->allocate_kv_cache(num_blocks, block_size, num_sliding_blocks);
  }

 private:
  std::unique_ptr<Model> inner_;
};

struct Group {
  std::unique_ptr<SpmdLeader> leader;
  RecordingModel* leader_model = nullptr;
  std::vector<std::unique_ptr<RecordingModel>> worker_models;
  std::vector<std::thread> workers;
  std::vector<std::string> worker_errors;
};

// Rank 0 here, ranks 1..world−1 on threads; worker `quitting` leaves right after connecting.
Group make_group(int world, int quitting = -1) {
  Group group;
  group.worker_errors.resize(static_cast<size_t>(world));
  std::promise<int> port;
  std::future<int> bound = port.get_future();
  auto config_for = [&](int rank, int port_number) {
    comm::BootstrapConfig config;
    config.rank = rank;
    config.world_size = world;
    config.port = port_number;
    config.timeout = std::chrono::seconds(20);
    config.idle_timeout = std::chrono::hours(1);
    return config;
  };
  std::unique_ptr<comm::TcpBootstrap> control;
  std::thread leader_side([&] {
    comm::BootstrapConfig config = config_for(0, 0);
    config.on_listening = [&](int p) { port.set_value(p); };
    control = std::make_unique<comm::TcpBootstrap>(config);
  });
  const int port_number = bound.get();
  for (int rank = 1; rank < world; ++rank) {
    group.worker_models.push_back(std::make_unique<RecordingModel>(make_dummy_cpu_model(preset_config("tiny"), 0)));
  }
  for (int rank = 1; rank < world; ++rank) {
    group.workers.emplace_back([&, rank, config = config_for(rank, port_number)] {
      try {
        comm::TcpBootstrap channel(config);
        if (rank == quitting) return;
        run_spmd_worker(*group.worker_models[static_cast<size_t>(rank - 1)], channel);
      } catch (const std::exception& error) {
        group.worker_errors[static_cast<size_t>(rank)] = error.what();
      }
    });
  }
  leader_side.join();
  auto local = std::make_unique<RecordingModel>(make_dummy_cpu_model(preset_config("tiny"), 0));
  group.leader_model = local.get();
  group.leader = std::make_unique<SpmdLeader>(std::move(local), std::move(control));
  return group;
}

TEST(SpmdModelTest, WorkersReplayEveryCallAndStopWithTheLeader) {
  Group group = make_group(3);
  const std::vector<std::vector<int32_t>> sequences = {{1, 2, 3, 4, 5}, {9, 8, 7}};
  const std::vector<float> logits = prefill_logits(*group.leader, sequences);
  const std::vector<float> alone = prefill_logits(*make_dummy_cpu_model(preset_config("tiny"), 0), sequences);
  EXPECT_EQ(logits, alone);
  const std::vector<int32_t> generated = greedy_generate(*group.leader, {4, 5, 6}, 4);
  EXPECT_EQ(generated.size(), 4u);
  // forward_sample is not offered by the cpu model: it fails on every rank alike, the group carries on
  ForwardBatch batch;
  const std::vector<int32_t> tokens = {3}, table = {0};
  batch.sequences.push_back({tokens, 0, table});
  std::vector<int32_t> drawn;
  const std::vector<RowSampling> rows(1);
  EXPECT_THROW(group.leader->forward_sample(batch, rows, drawn), Error);
  std::vector<float> after;
  group.leader->forward(batch, after);
  const auto calls = group.leader_model->calls;
  const auto last_logits = group.leader_model->last_logits;
  const int allocations = group.leader_model->allocations;
  group.leader.reset();  // tells the workers to stop
  for (auto& thread : group.workers) thread.join();
  for (const std::string& error : group.worker_errors) EXPECT_EQ(error, "");
  for (auto& worker : group.worker_models) {
    EXPECT_EQ(worker->calls, calls);
    EXPECT_EQ(worker->allocations, allocations);
    EXPECT_EQ(worker->last_logits, last_logits);
  }
}

TEST(SpmdModelTest, AWorkerThatLeftIsNamedOnTheNextCall) {
  Group group = make_group(3, 2);
  for (size_t i = 0; i < group.workers.size(); ++i) {
    if (i == 1) group.workers[i].join();  // rank 2 has gone
  }
  try {
    group.leader->allocate_kv_cache(4, 16);
    FAIL() << "the call went through without rank 2";
  } catch (const comm::CommError& error) {
    EXPECT_NE(std::string(error.what()).find("rank 2 closed its connection"), std::string::npos) << error.what();
  }
  group.leader.reset();
  group.workers[0].join();
  EXPECT_NE(group.worker_errors[1].find("closed its connection"), std::string::npos) << group.worker_errors[1];
}

}  // namespace
}  // namespace gossamer::model
