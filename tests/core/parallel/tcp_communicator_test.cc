// The CPU communicator and the rendezvous, ranks as threads over real sockets: the collectives'
// results (the all-reduce bit-identical on every rank and summed in rank order), and every way a
// rank can fail -- closing, reporting an error, hanging, joining wrong -- ending in an error that
// names the rank, in bounded time.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/parallel/rendezvous.h"
#include "core/parallel/tcp_communicator.h"
#include "support/drift_error_matchers.h"

namespace drift {
namespace {

using namespace std::chrono_literals;

// `size` communicators joined through a real rendezvous on a free local port.
std::vector<std::unique_ptr<TcpCommunicator>> join(int size, std::chrono::milliseconds timeout = 10s) {
  RendezvousListener listener(parse_rendezvous_address("127.0.0.1:0", "test"));
  const RendezvousAddress address{"127.0.0.1", listener.port()};
  std::vector<std::future<FramedSocket>> joining;
  for (int r = 1; r < size; ++r)
    joining.push_back(std::async(std::launch::async, [=] { return join_rendezvous(address, r, size, 10s); }));
  std::vector<std::unique_ptr<TcpCommunicator>> ranks;
  ranks.push_back(std::make_unique<TcpCommunicator>(0, size, listener.accept_ranks(size, 10s, {}), timeout));
  for (int r = 1; r < size; ++r) {
    std::vector<FramedSocket> link;
    link.push_back(joining[r - 1].get());
    ranks.push_back(std::make_unique<TcpCommunicator>(r, size, std::move(link), timeout));
  }
  return ranks;
}

// Runs f(rank) on every rank at once (the collectives need all of them).
template <typename F>
void on_every_rank(std::vector<std::unique_ptr<TcpCommunicator>>& ranks, F f) {
  std::vector<std::future<void>> running;
  for (auto& rank : ranks) running.push_back(std::async(std::launch::async, [&, c = rank.get()] { f(*c); }));
  for (auto& r : running) r.get();
}

TEST(TcpCommunicator, AllReduceGivesEveryRankTheSameRankOrderSum) {
  for (int size : {2, 3, 4}) {
    auto ranks = join(size);
    // Values whose float sum depends on the order: every rank must get rank order's exact bits.
    auto part = [](int rank, size_t i) {
      return (rank % 2 ? 1e8f : 1.0f) * (rank + 1) * (i % 2 ? -1.0f : 1.0f) + 0.5f * i;
    };
    const size_t n = 100003;  // several socket buffers' worth
    std::vector<float> expected(n);
    for (size_t i = 0; i < n; ++i) {
      expected[i] = part(0, i);
      for (int r = 1; r < size; ++r) expected[i] += part(r, i);
    }
    std::vector<std::vector<float>> results(size);
    on_every_rank(ranks, [&](TcpCommunicator& c) {
      std::vector<float> data(n);
      for (size_t i = 0; i < n; ++i) data[i] = part(c.rank(), i);
      c.all_reduce_sum(data);
      results[c.rank()] = std::move(data);
    });
    for (int r = 0; r < size; ++r)
      EXPECT_EQ(0, std::memcmp(results[r].data(), expected.data(), n * sizeof(float)))
          << "rank " << r << " of " << size;
  }
}

TEST(TcpCommunicator, GatherCollectsEveryRanksRowsInRankOrderAndBroadcastReachesAll) {
  auto ranks = join(3);
  std::vector<std::vector<float>> gathered;
  std::vector<std::vector<uint8_t>> received(3);
  on_every_rank(ranks, [&](TcpCommunicator& c) {
    std::vector<float> mine(static_cast<size_t>(c.rank() + 1), static_cast<float>(c.rank()));  // lengths differ
    auto parts = c.gather(mine);
    if (c.rank() == 0) gathered = std::move(parts);
    std::vector<uint8_t> bytes = c.rank() == 0 ? std::vector<uint8_t>{7, 8, 9} : std::vector<uint8_t>{};
    c.broadcast(bytes);
    received[c.rank()] = bytes;
  });
  ASSERT_EQ(gathered.size(), 3u);
  EXPECT_EQ(gathered[0], std::vector<float>{0});
  EXPECT_EQ(gathered[1], (std::vector<float>{1, 1}));
  EXPECT_EQ(gathered[2], (std::vector<float>{2, 2, 2}));
  for (const auto& bytes : received) EXPECT_EQ(bytes, (std::vector<uint8_t>{7, 8, 9}));
}

TEST(TcpCommunicator, ARankThatClosesItsConnectionIsNamed) {
  auto ranks = join(3);
  ranks[2].reset();  // rank 2's process is gone
  std::vector<float> data(10, 1.0f);
  auto rank1 = std::async(std::launch::async, [&] {
    std::vector<float> d(10, 1.0f);
    try {
      ranks[1]->all_reduce_sum(d);
    } catch (const DriftError&) {  // rank 0 closes once it fails
    }
  });
  EXPECT_DRIFT_ERROR(ranks[0]->all_reduce_sum(data), "tensor parallel rank 2 closed its connection");
  ranks[0].reset();
  rank1.get();
}

TEST(TcpCommunicator, ARanksErrorReachesRankZeroWithItsReason) {
  auto ranks = join(2);
  ranks[1]->link(0).send_error("out of memory loading layer 3");
  std::vector<float> data(4);
  EXPECT_DRIFT_ERROR(ranks[0]->all_reduce_sum(data), "tensor parallel rank 1 failed: out of memory loading layer 3");
}

TEST(TcpCommunicator, AHungRankEndsTheCollectiveAfterTheTimeout) {
  auto ranks = join(3, 300ms);
  std::vector<float> data(4);
  auto rank1 = std::async(std::launch::async, [&] {
    std::vector<float> d(4);
    try {
      ranks[1]->all_reduce_sum(d);
    } catch (const DriftError&) {
    }
  });
  const auto start = std::chrono::steady_clock::now();
  // Rank 2 never joins the all-reduce.
  EXPECT_DRIFT_ERROR(ranks[0]->all_reduce_sum(data), "tensor parallel rank 2 sent nothing in time");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ranks[0].reset();
  rank1.get();
}

// A rank that stops reading (stopped, swapping) while rank 0 sends it more than the socket buffers
// hold: the send gives up at the deadline instead of blocking in the kernel.
TEST(TcpCommunicator, ARankThatStopsReadingEndsALargeSendAfterTheTimeout) {
  auto ranks = join(2, 300ms);
  std::vector<uint8_t> big(64 << 20, 1);  // far more than a socket buffer
  const auto start = std::chrono::steady_clock::now();
  EXPECT_DRIFT_ERROR(ranks[0]->broadcast(big), "tensor parallel rank 1 stopped reading");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// A frame's length is checked against its kind's bound before anything is allocated for it.
TEST(FramedSocket, AFrameLongerThanItsKindMayBeIsRefused) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  FramedSocket reader(fds[0], 3);
  const uint64_t header[2] = {static_cast<uint64_t>(FrameTag::kReduce), uint64_t{1} << 60};
  ASSERT_EQ(write(fds[1], header, sizeof(header)), static_cast<ssize_t>(sizeof(header)));
  EXPECT_DRIFT_ERROR(reader.receive(FrameTag::kReduce, 1s), "tensor parallel rank 3 sent a all-reduce frame of");
  close(fds[1]);
}

TEST(Rendezvous, ConnectionsThatAreNotRanksAreClosedAndTheRanksStillJoin) {
  RendezvousListener listener(parse_rendezvous_address("127.0.0.1:0", "test"));
  const RendezvousAddress address{"127.0.0.1", listener.port()};
  auto probe = std::async(std::launch::async, [&] {  // an HTTP health probe
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(address.port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    const char request[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n                  ";
    (void)write(fd, request, sizeof(request));
    std::this_thread::sleep_for(200ms);
    close(fd);
  });
  std::this_thread::sleep_for(50ms);
  auto rank1 = std::async(std::launch::async, [=] { return join_rendezvous(address, 1, 2, 5s); });
  auto links = listener.accept_ranks(2, 5s, {});
  EXPECT_TRUE(links[1].connected());
  probe.get();
  rank1.get();
}

TEST(Rendezvous, RanksThatDoNotJoinOrJoinWrongAreNamed) {
  {
    RendezvousListener listener(parse_rendezvous_address("127.0.0.1:0", "test"));
    const RendezvousAddress address{"127.0.0.1", listener.port()};
    auto one = std::async(std::launch::async, [=] { return join_rendezvous(address, 1, 4, 5s); });
    EXPECT_DRIFT_ERROR(listener.accept_ranks(4, 500ms, {}), "rank(s) 2, 3 did not join within");
  }
  {
    RendezvousListener listener(parse_rendezvous_address("127.0.0.1:0", "test"));
    const RendezvousAddress address{"127.0.0.1", listener.port()};
    auto wrong = std::async(std::launch::async, [=] { return join_rendezvous(address, 1, 3, 5s); });
    EXPECT_DRIFT_ERROR(listener.accept_ranks(2, 5s, {}),
                       "rank 1 was started for tensor_parallel_size = 3, this engine has 2");
  }
  {
    RendezvousListener listener(parse_rendezvous_address("127.0.0.1:0", "test"));
    EXPECT_DRIFT_ERROR(listener.accept_ranks(2, 5s, [] { fail("rank 1 (process 7) exited with status 1"); }),
                       "rank 1 (process 7) exited");
  }
}

TEST(Rendezvous, AddressesAreHostColonPort) {
  const RendezvousAddress a = parse_rendezvous_address("10.0.0.2:29500", "x");
  EXPECT_EQ(a.host, "10.0.0.2");
  EXPECT_EQ(a.port, 29500);
  EXPECT_EQ(parse_rendezvous_address("[::1]:5", "x").host, "::1");
  EXPECT_DRIFT_ERROR(parse_rendezvous_address("localhost", "tensor_parallel.rendezvous"),
                     "tensor_parallel.rendezvous = \"localhost\": expected HOST:PORT");
  EXPECT_DRIFT_ERROR(parse_rendezvous_address("h:99999", "--rendezvous"), "the port '99999'");
  EXPECT_DRIFT_ERROR(join_rendezvous({"127.0.0.1", 1}, 1, 2, 300ms), "cannot reach rank 0's rendezvous");
}

}  // namespace
}  // namespace drift
