// Listening beyond loopback needs CURVE: unauthenticated and wrong-key
// clients are refused (and the refusal logged), the right key works, and
// nothing binds every interface unless asked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "ipc/control.h"
#include "ipc/curve.h"
#include "ipc/publisher.h"
#include "ipc/subscriber.h"

namespace pw::ipc {
namespace {
using namespace std::chrono_literals;

std::string temp_dir() {
  auto d = std::filesystem::temp_directory_path() / ("pw_curve_" + std::to_string(::getpid()) + "_" +
                                                      std::to_string(std::rand()));
  return d.string();
}

std::string port_of(const std::string& ep) { return ep.substr(ep.rfind(':') + 1); }

pb::ControlReply ok_handler(const pb::ControlRequest&) { return {}; }

struct Server {
  CurveServer curve;
  std::unique_ptr<Publisher> pub;
  std::unique_ptr<ControlServer> ctl;
  std::string control_local;  // the control socket reached over loopback
  std::string telemetry_local;
  explicit Server(const std::string& dir) : curve(curve_server_from_dir(dir)) {
    PublisherOptions po;
    po.endpoint = "tcp://0.0.0.0:*";
    po.allow_remote = true;
    po.curve = curve;
    po.heartbeat = 50ms;
    pub = std::make_unique<Publisher>("run-curve", po);
    ControlServerOptions co;
    co.endpoint = "tcp://0.0.0.0:*";
    co.allow_remote = true;
    co.curve = curve;
    ctl = std::make_unique<ControlServer>(ok_handler, pub.get(), co);
    control_local = "tcp://127.0.0.1:" + port_of(ctl->endpoint());
    telemetry_local = "tcp://127.0.0.1:" + port_of(pub->endpoint());
  }
};
}  // namespace

TEST(Curve, KeyFilesAreWrittenPrivateAndCheckedOnRead) {
  std::string dir = temp_dir();
  write_curve_key_dir(dir);
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/server.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir + "/client.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  CurveServer s = curve_server_from_dir(dir);
  EXPECT_EQ(s.keys.public_key, read_public_key_file(dir + "/server.pub"));
  ASSERT_EQ(s.authorized_clients.size(), 1u);
  EXPECT_EQ(s.authorized_clients[0], read_public_key_file(dir + "/client.pub"));
  EXPECT_THROW(write_curve_key_dir(dir), std::runtime_error);  // never overwrites
  ::chmod((dir + "/client.key").c_str(), 0644);
  try {
    read_secret_key_file(dir + "/client.key");
    FAIL() << "a world-readable secret key must be refused";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("readable by others"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(Curve, NonLoopbackBindNeedsAskingAndKeys) {
  PublisherOptions o;
  o.endpoint = "tcp://0.0.0.0:*";
  EXPECT_THROW(Publisher("x", o), std::invalid_argument);  // not asked for
  o.allow_remote = true;
  try {
    Publisher p("x", o);
    FAIL() << "binding every interface without CURVE must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CURVE"), std::string::npos) << e.what();
  }
  Publisher local("y");  // the default binds loopback only
  EXPECT_EQ(local.endpoint().rfind("tcp://127.0.0.1:", 0), 0u);
}

TEST(Curve, RightKeyWorksWrongKeyAndNoKeyAreRefusedAndLogged) {
  std::string dir = temp_dir();
  write_curve_key_dir(dir);
  std::vector<std::string> refusals;
  std::mutex mu;
  set_curve_refusal_logger([&](const std::string& s) {
    std::lock_guard lk(mu);
    refusals.push_back(s);
  });
  Server server(dir);
  auto before = curve_auth_stats();

  CurveClient right = curve_client_from_files(dir + "/server.pub", dir + "/client.key");
  ControlClient good(server.control_local, "good", &right);
  EXPECT_TRUE(good.heartbeat(3s));
  SubscriberOptions so;
  so.curve = right;
  Subscriber sub(server.telemetry_local, so);
  EXPECT_TRUE(sub.wait_connected(3s));

  CurveClient wrong = right;
  wrong.keys = generate_curve_keys();  // a key the server never authorized
  ControlClient intruder(server.control_local, "intruder", &wrong);
  EXPECT_FALSE(intruder.heartbeat(800ms));

  ControlClient anonymous(server.control_local, "anonymous");  // no CURVE at all
  EXPECT_FALSE(anonymous.heartbeat(800ms));
  SubscriberOptions plain;
  Subscriber eavesdropper(server.telemetry_local, plain);
  EXPECT_FALSE(eavesdropper.wait_connected(800ms));

  auto after = curve_auth_stats();
  EXPECT_GE(after.accepted - before.accepted, 2u);
  EXPECT_GE(after.refused - before.refused, 1u);
  std::lock_guard lk(mu);
  ASSERT_FALSE(refusals.empty());
  EXPECT_NE(refusals[0].find(wrong.keys.public_key), std::string::npos) << refusals[0];
  set_curve_refusal_logger(nullptr);
  std::filesystem::remove_all(dir);
}

}  // namespace pw::ipc
