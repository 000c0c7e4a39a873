// ConnectionStream over socketpairs: reads come from what was already read first, and a
// request's reads stop at its read budget (httplib's chunk-size line reader would otherwise
// grow without limit).
#include "server/connection_stream.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace drift::server {
namespace {

using namespace std::chrono_literals;

struct Pair {
  int client = -1;
  int server = -1;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    client = fds[0];
    server = fds[1];
  }
  ~Pair() {
    ::close(client);
    ::close(server);
  }
};

ConnectionStream stream_on(const Pair& p, std::string pending, size_t budget) {
  return ConnectionStream(p.server, std::move(pending), ConnectionStream::Clock::now() + 2s, 500ms, 500ms, budget);
}

// Reads a byte at a time, as httplib's line reader does, until a read fails or ends.
std::string read_bytewise(ConnectionStream& stream) {
  std::string out;
  char c;
  while (stream.read(&c, 1) == 1) out += c;
  return out;
}

TEST(ConnectionStream, ReadsStopAtTheBudgetWhateverTheClientSends) {
  Pair p;
  const std::string line = "1;" + std::string(10000, 'a');  // a chunk line with no end
  ASSERT_EQ(::write(p.client, line.data(), line.size()), ssize_t(line.size()));
  ConnectionStream stream = stream_on(p, "GET / HTTP/1.1\r\n", 100);
  EXPECT_EQ(read_bytewise(stream).size(), 100u);
  EXPECT_TRUE(stream.budget_spent());
  EXPECT_EQ(stream.consumed(), 100u);
}

TEST(ConnectionStream, ALargeReadIsCutToTheBudgetLeft) {
  Pair p;
  const std::string body(8192, 'b');
  ASSERT_EQ(::write(p.client, body.data(), body.size()), ssize_t(body.size()));
  ConnectionStream stream = stream_on(p, "", 5000);
  std::string buf(8192, '\0');
  ssize_t total = 0, n;
  while (total < 8192 && (n = stream.read(buf.data(), buf.size())) > 0) total += n;
  EXPECT_EQ(total, 5000);
  EXPECT_EQ(stream.read(buf.data(), buf.size()), -1);
  EXPECT_TRUE(stream.budget_spent());
}

TEST(ConnectionStream, WithinTheBudgetNothingIsLostAndTheRestIsHandedBack) {
  Pair p;
  const std::string next = "GET /next HTTP/1.1\r\n\r\n";
  ASSERT_EQ(::write(p.client, next.data(), next.size()), ssize_t(next.size()));
  ConnectionStream stream = stream_on(p, "ab", 1000);
  char c[2];
  ASSERT_EQ(stream.read(c, 2), 2);
  ASSERT_EQ(stream.read(c, 1), 1);  // reads ahead a chunk, hands out one byte
  EXPECT_EQ(c[0], 'G');
  EXPECT_FALSE(stream.budget_spent());
  EXPECT_EQ(stream.consumed(), 3u);
  EXPECT_EQ(stream.take_unread(), next.substr(1));
}

}  // namespace
}  // namespace drift::server
