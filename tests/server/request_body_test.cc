// A generation request's body: the size limit holds whatever the framing and stops the read as
// soon as it is passed; the Content-Type must be JSON.
#include <gtest/gtest.h>

#include <string>

#include "server/api_error.h"
#include "server/request_body.h"

namespace drift::server {
namespace {

httplib::Request request(std::initializer_list<std::pair<std::string, std::string>> headers) {
  httplib::Request req;
  req.method = "POST";
  for (const auto& [k, v] : headers) req.set_header(k, v);
  return req;
}

// A ContentReader delivering `chunks` pieces of `piece` bytes, as httplib does for a chunked
// body; `delivered` counts the pieces handed over before the receiver stopped it.
httplib::ContentReader reader_of(int chunks, size_t piece, int& delivered) {
  return httplib::ContentReader(
      [=, &delivered](httplib::ContentReceiver receiver) {
        const std::string data(piece, 'a');
        for (int i = 0; i < chunks; ++i) {
          ++delivered;
          if (!receiver(data.data(), data.size())) return false;
        }
        return true;
      },
      [](httplib::MultipartContentHeader, httplib::ContentReceiver) { return false; });
}

int status_of(const httplib::Request& req, const httplib::ContentReader& reader, size_t limit) {
  try {
    read_json_body(req, reader, limit);
  } catch (const ApiError& e) {
    return e.status;
  }
  return 200;
}

TEST(RequestBody, AChunkedBodyStopsAtTheFirstPiecePastTheLimit) {
  int delivered = 0;
  const auto req = request({{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}});
  EXPECT_EQ(status_of(req, reader_of(1000, 1024, delivered), 10 * 1024), 413);
  EXPECT_EQ(delivered, 11);  // 10 pieces fit exactly; the 11th passes the limit and ends the read
  delivered = 0;
  EXPECT_EQ(read_json_body(req, reader_of(10, 1024, delivered), 10 * 1024).size(), 10u * 1024);
}

TEST(RequestBody, AContentLengthOverTheLimitIsRefusedBeforeReading) {
  int delivered = 0;
  const auto req = request({{"Content-Type", "application/json"}, {"Content-Length", "1000000000000"}});
  EXPECT_EQ(status_of(req, reader_of(1, 1, delivered), 1 << 20), 413);
  EXPECT_EQ(delivered, 0);
  EXPECT_EQ(status_of(request({{"Content-Type", "application/json"}, {"Content-Length", "12x"}}),
                      reader_of(1, 1, delivered), 1 << 20),
            400);
}

TEST(RequestBody, ABodyCutShortIs400) {
  int delivered = 0;
  const httplib::ContentReader failing([](httplib::ContentReceiver) { return false; },
                                       [](httplib::MultipartContentHeader, httplib::ContentReceiver) { return false; });
  EXPECT_EQ(status_of(request({{"Content-Type", "application/json"}, {"Content-Length", "10"}}), failing, 100), 400);
  // No Content-Length and no Transfer-Encoding: HTTP/1.1 says there is no body (httplib would
  // read until the client closes).
  EXPECT_EQ(read_json_body(request({{"Content-Type", "application/json"}}), reader_of(5, 5, delivered), 100), "");
  EXPECT_EQ(delivered, 0);
}

TEST(RequestBody, OnlyJsonIsAccepted) {
  for (const char* type :
       {"application/json", "application/json; charset=utf-8", "Application/JSON", " application/json ;charset=UTF-8"})
    EXPECT_TRUE(is_json_content_type(type)) << type;
  for (const char* type :
       {"", "text/plain", "application/x-www-form-urlencoded", "application/jsonl", "multipart/form-data; boundary=x"})
    EXPECT_FALSE(is_json_content_type(type)) << type;
  int delivered = 0;
  try {
    read_json_body(request({{"Content-Type", "text/plain"}, {"Content-Length", "2"}}), reader_of(1, 2, delivered), 100);
    FAIL() << "text/plain was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 415);
    EXPECT_NE(std::string(e.what()).find("Content-Type"), std::string::npos) << e.what();
  }
  EXPECT_EQ(delivered, 0);
}

}  // namespace
}  // namespace drift::server
