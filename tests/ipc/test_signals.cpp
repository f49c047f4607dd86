// Signals with handlers (the CLI's SIGINT/SIGTERM, a profiler's or
// libFuzzer's timer) interrupt zmq_poll with EINTR. Neither the control
// server's thread, nor a client waiting for a reply, nor a subscriber may
// turn that into an exception or a lost reply. The CI fuzzer found this:
// libFuzzer's SIGALRM landed in ControlClient::request and aborted it.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/time.h>

#include <atomic>
#include <thread>

#include "ipc/control.h"
#include "ipc/publisher.h"
#include "ipc/subscriber.h"

namespace pw::ipc {
namespace {

using namespace std::chrono_literals;

std::atomic<int> g_alarms{0};
void on_alarm(int) { g_alarms.fetch_add(1, std::memory_order_relaxed); }

// An interval timer firing every millisecond, with a handler installed
// without SA_RESTART (poll is never restarted anyway), for the test's scope.
class AlarmStorm {
 public:
  AlarmStorm() {
    struct sigaction sa {};
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old_);
    itimerval every_ms{{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &every_ms, nullptr);
  }
  ~AlarmStorm() {
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &old_, nullptr);
  }

 private:
  struct sigaction old_ {};
};

TEST(Signals, AControlRoundTripSurvivesASignalStorm) {
  Publisher pub("run-signals");
  // Slow replies keep the client inside its poll while the alarms land.
  ControlServer server(
      [](const pb::ControlRequest&) {
        std::this_thread::sleep_for(20ms);
        return pb::ControlReply{};
      },
      &pub);
  ControlClient client(server.endpoint(), "storm");
  AlarmStorm storm;
  const int before = g_alarms.load();
  for (int i = 0; i < 10; ++i) {
    std::optional<pb::ControlReply> r;
    ASSERT_NO_THROW(r = client.pause(5s)) << "request " << i;
    ASSERT_TRUE(r) << "request " << i << " got no reply";
    EXPECT_EQ(r->code(), pb::OK);
  }
  EXPECT_GT(g_alarms.load() - before, 20) << "the storm did not happen; the test proves nothing";
  EXPECT_TRUE(client.heartbeat(5s));
}

TEST(Signals, ASubscriberWaitingOnASilentPublisherIsNotInterrupted) {
  Publisher pub("run-quiet");
  Subscriber sub(pub.endpoint());
  AlarmStorm storm;
  const int before = g_alarms.load();
  std::optional<Subscriber::Message> m;
  // Drains whatever the publisher said on connecting, then waits in poll.
  for (int i = 0; i < 5; ++i) ASSERT_NO_THROW(m = sub.receive(60ms));
  EXPECT_GT(g_alarms.load() - before, 20);
}

}  // namespace
}  // namespace pw::ipc
