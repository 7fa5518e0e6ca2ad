// The TCP bootstrap on localhost: ranks as threads (the same sockets as across hosts), all-gather and
// broadcast of blobs, and clear errors for a rank that dies or never connects.
#include "comm/tcp_bootstrap.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "comm/communicator.h"

namespace gossamer::comm {
namespace {

// Runs fn(rank, bootstrap) for every rank of a world on a free port; rank 0 starts first.
std::vector<std::string> run_world(int world, std::chrono::milliseconds timeout,
                                   const std::function<void(TcpBootstrap&)>& fn, int skip_rank = -1) {
  std::promise<int> port;  // rank 0's bound port (0: rank 0 failed or a world of 1, which never listens)
  std::future<int> port_ready = port.get_future();
  bool port_set = false;  // touched by rank 0's thread only
  auto publish = [&](int bound) {
    if (!port_set) port.set_value(bound);
    port_set = true;
  };
  std::vector<std::string> errors(static_cast<size_t>(world));
  auto body = [&](int rank, int port_number) {
    try {
      BootstrapConfig config;
      config.port = port_number;
      config.rank = rank;
      config.world_size = world;
      config.timeout = timeout;
      if (rank == 0) config.on_listening = publish;
      TcpBootstrap bootstrap(config);
      if (rank == 0) publish(0);
      fn(bootstrap);
    } catch (const std::exception& error) {
      errors[static_cast<size_t>(rank)] = error.what();
      if (rank == 0) publish(0);
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(body, 0, 0);
  const int bound = port_ready.get();
  for (int rank = 1; rank < world; ++rank) {
    if (rank != skip_rank) threads.emplace_back(body, rank, bound);
  }
  for (auto& thread : threads) thread.join();
  return errors;
}

TEST(TcpBootstrapTest, AllGatherAndBroadcastBlobs) {
  for (int world : {1, 2, 4}) {
    std::vector<std::vector<std::string>> gathered(static_cast<size_t>(world));
    std::vector<std::string> broadcasts(static_cast<size_t>(world));
    const auto errors = run_world(world, std::chrono::seconds(20), [&](TcpBootstrap& bootstrap) {
      const std::string mine(static_cast<size_t>(bootstrap.rank() * 1000 + 1),
                             static_cast<char>('a' + bootstrap.rank()));
      gathered[static_cast<size_t>(bootstrap.rank())] = bootstrap.all_gather(mine);
      broadcasts[static_cast<size_t>(bootstrap.rank())] =
          bootstrap.broadcast(bootstrap.rank() == world - 1 ? "unique-id" : "", world - 1);
      bootstrap.barrier();
    });
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "world " << world;
      ASSERT_EQ(gathered[static_cast<size_t>(r)].size(), static_cast<size_t>(world));
      for (int q = 0; q < world; ++q) {
        EXPECT_EQ(gathered[static_cast<size_t>(r)][static_cast<size_t>(q)],
                  std::string(static_cast<size_t>(q * 1000 + 1), static_cast<char>('a' + q)));
      }
      EXPECT_EQ(broadcasts[static_cast<size_t>(r)], "unique-id");
    }
  }
}

TEST(TcpBootstrapTest, ARankThatNeverConnectsFailsRankZeroAtTheDeadline) {
  const auto errors = run_world(
      3, std::chrono::milliseconds(300), [](TcpBootstrap&) {}, 2);
  EXPECT_NE(errors[0].find("timed out after 300 ms with 2 of 3 ranks connected"), std::string::npos) << errors[0];
}

TEST(TcpBootstrapTest, ARankThatDiesMidRunIsNamedOnTheOthers) {
  const auto errors = run_world(3, std::chrono::seconds(20), [](TcpBootstrap& bootstrap) {
    bootstrap.barrier();
    if (bootstrap.rank() == 2) throw std::runtime_error("rank 2 crashed");  // its socket closes with it
    bootstrap.barrier();
  });
  EXPECT_NE(errors[0].find("rank 2 closed its connection"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("closed its connection"), std::string::npos) << errors[1];  // rank 0 went down with the news
}

TEST(TcpBootstrapTest, NoRankZeroIsAClearError) {
  BootstrapConfig config;
  config.port = 1;  // nothing listens on port 1
  config.rank = 1;
  config.world_size = 2;
  config.timeout = std::chrono::milliseconds(200);
  try {
    TcpBootstrap bootstrap(config);
    FAIL() << "connected to nothing";
  } catch (const CommError& error) {
    EXPECT_NE(std::string(error.what()).find("could not reach rank 0 at 127.0.0.1:1 within 200 ms"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace gossamer::comm
