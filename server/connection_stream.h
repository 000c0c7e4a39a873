#pragma once
// ConnectionStream: cpp-httplib's Stream over one client socket, for one request at a time.
// Unlike httplib's own, it bounds the whole read of a request, not only each read: a client
// sending its body a byte at a time (each read quick, the whole endless) fails at the request's
// read deadline instead of holding an HTTP thread. What it reads ahead of the request (a
// pipelined next one) is kept and handed back with take_unread().
// It also bounds how many bytes one request may read (`read_budget`): httplib reads a chunked
// body's size lines, extensions and trailers with a line reader that grows without limit, and
// none of those bytes reach the body's size check, so without a budget a `1;aaaa...` chunk
// line with no end would grow until memory ran out.
#include <httplib.h>

#include <chrono>
#include <string>

namespace drift::server {

class ConnectionStream : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;
  // `pending`: bytes of this connection already read; `read_deadline`: when reading this request
  // must be done; each read and write also waits at most its timeout; `read_budget`: the most
  // bytes read() hands out (head, body and framing), after which it fails.
  ConnectionStream(int fd, std::string pending, Clock::time_point read_deadline, std::chrono::milliseconds read_timeout,
                   std::chrono::milliseconds write_timeout, size_t read_budget);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  // Bytes read but not yet consumed: the start of the connection's next request.
  std::string take_unread();
  // Bytes read() has handed out so far.
  size_t consumed() const { return consumed_; }
  // Whether a read failed because the request reached its read budget.
  bool budget_spent() const { return budget_spent_; }

 private:
  bool wait_readable() const;
  ssize_t read_unbudgeted(char* ptr, size_t size);

  int fd_;
  std::string buffer_;
  size_t offset_ = 0;  // consumed bytes of buffer_
  Clock::time_point read_deadline_;
  std::chrono::milliseconds read_timeout_;
  std::chrono::milliseconds write_timeout_;
  size_t read_budget_;
  size_t consumed_ = 0;
  bool budget_spent_ = false;
};

}  // namespace drift::server
