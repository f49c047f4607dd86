#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "ipc/control.h"
#include "ipc/publisher.h"
#include "../timing_checks.h"

namespace pw::ipc {
namespace {

using namespace std::chrono_literals;

pb::ControlReply handler(const pb::ControlRequest& r) {
  switch (r.command_case()) {
    case pb::ControlRequest::kPause: return {};
    case pb::ControlRequest::kSet:
      if (r.set().key() == "replan") return {};
      return error_reply(pb::INVALID, "unknown setting " + r.set().key());
    case pb::ControlRequest::kCheckpoint: throw std::runtime_error("disk full");
    default: return error_reply(pb::UNSUPPORTED, "no");
  }
}

TEST(Control, RequestsGetMatchingRepliesAndErrors) {
  Publisher pub("run-c");
  pub.set_run_info("job-c", 2, "run");
  ControlServer server(handler, &pub);
  EXPECT_EQ(server.endpoint().rfind("tcp://127.0.0.1:", 0), 0u);
  ControlClient c(server.endpoint(), "tester");

  auto r = c.pause(2s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code(), pb::OK);
  EXPECT_EQ(r->request_id(), 1u);
  EXPECT_GT(r->server_unix_ns(), 0);

  r = c.set("replan", "now", 2s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code(), pb::OK);
  r = c.set("frobnicate", "1", 2s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code(), pb::INVALID);
  EXPECT_NE(r->error().find("frobnicate"), std::string::npos);

  r = c.checkpoint(2s);  // the handler throws
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code(), pb::INTERNAL);
  EXPECT_EQ(r->error(), "disk full");

  r = c.request(pb::ControlRequest(), 2s);  // no command: a newer client?
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code(), pb::UNSUPPORTED);

  pb::ControlRequest newer;
  newer.mutable_pause();
  auto req_newer = newer;
  // The client stamps its own version; send a newer one raw.
  req_newer.set_protocol_major(kProtocolMajor + 1);
  req_newer.set_request_id(99);
  c.send_raw(req_newer.SerializeAsString());
  r = c.heartbeat(2s) ? std::optional<pb::ControlReply>(pb::ControlReply()) : std::nullopt;
  EXPECT_TRUE(r);
  EXPECT_GE(c.stats().stale, 1u);  // the raw request's reply (id 99) was not waited for

  r = c.snapshot(2s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->snapshot().status().job_name(), "job-c");
  EXPECT_EQ(r->snapshot().last_seq_size(), kTopicCount);

  auto s = server.stats();
  EXPECT_GE(s.errors, 4u);
  EXPECT_EQ(s.unknown, 1u);
  auto clients = server.clients();
  EXPECT_NE(std::find(clients.begin(), clients.end(), "tester"), clients.end());
}

TEST(Control, HeartbeatsTellEachSideWhenTheOtherIsGone) {
  std::string endpoint;
  {
    ControlServerOptions o;
    o.client_timeout = 300ms;
    ControlServer server(handler, nullptr, o);
    endpoint = server.endpoint();
    {
      ControlClient c(endpoint, "short-lived");
      EXPECT_TRUE(c.heartbeat(2s));
      EXPECT_EQ(server.clients().size(), 1u);
    }
    std::this_thread::sleep_for(400ms);
    EXPECT_TRUE(server.clients().empty()) << "a silent client is gone after client_timeout";
    EXPECT_EQ(server.stats().heartbeats, 1u);
  }
  ControlClient c(endpoint, "orphan");
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(c.heartbeat(300ms)) << "the server is gone";
  if (::pw::test::timing_checks()) EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(c.stats().timeouts, 1u);
}

TEST(Control, MalformedRequestsAreCountedAndDropped) {
  ControlServer server(handler);
  ControlClient c(server.endpoint(), "fuzzer");
  c.send_raw(std::string("\xff\xff\xff\xff garbage", 12));
  c.send_raw(std::string(1, '\x0a'));
  ASSERT_TRUE(c.heartbeat(2s)) << "the server still answers";
  auto s = server.stats();
  EXPECT_EQ(s.malformed, 2u);
  EXPECT_EQ(s.requests, 1u);
}

// `pipewright control ENDPOINT` talks to the endpoint it is given (issue 41,
// item 10: it first waited up to 1.5 s for telemetry on it). A control
// server completes the DEALER's handshake; a telemetry publisher refuses it
// (a PUB is no peer of a DEALER), which the client reports at once, not when
// its timeout runs out: only then does the CLI subscribe for the heartbeat.
TEST(Control, AClientTellsAControlServerFromAPublisherByTheHandshake) {
  Publisher pub("run-k");
  ControlServer server(handler, &pub);
  ControlClient direct(server.endpoint(), "direct");
  auto r = direct.query_status(5s);
  ASSERT_TRUE(r);
  EXPECT_EQ(direct.peer(), ControlClient::Peer::Control);
  EXPECT_EQ(direct.stats().refused, 0u);
  ControlClient wrong(pub.endpoint(), "wrong");
  EXPECT_FALSE(wrong.query_status(20s));  // returns at the refusal, not after 20 s
  EXPECT_EQ(wrong.peer(), ControlClient::Peer::Refused);
  EXPECT_EQ(wrong.stats().refused, 1u);
  EXPECT_EQ(wrong.stats().timeouts, 0u);
}

}  // namespace
}  // namespace pw::ipc
