// The server raises its open-file soft limit to the hard one (parked connections each hold a
// descriptor), and sizes the gate from it.
#include "server/fd_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace drift::server {
namespace {

TEST(FdLimit, TheSoftLimitIsRaisedToTheHardOne) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max < 128) GTEST_SKIP() << "hard limit too low to lower the soft one";
  limit.rlim_cur = 64;  // lowered first, so the test cannot pass by finding it already raised
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  const FdLimit raised = raise_fd_limit();
  EXPECT_EQ(raised.before, 64u);
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(raised.now, limit.rlim_cur);
  EXPECT_GT(limit.rlim_cur, 64u);
  // The hard limit, unless the kernel's fs.nr_open is lower (an "unlimited" hard limit).
  if (limit.rlim_max != RLIM_INFINITY) {
    EXPECT_EQ(limit.rlim_cur, limit.rlim_max);
  }
}

TEST(FdLimit, TheGateLeavesRoomForBusyConnectionsAndOtherFiles) {
  EXPECT_EQ(gate_connection_limit(1024, 272), 1024u - 272 - 256);
  EXPECT_EQ(gate_connection_limit(1'048'576, 272), 16384u);  // capped
  EXPECT_EQ(gate_connection_limit(300, 272), 16u);           // never none
}

}  // namespace
}  // namespace drift::server
