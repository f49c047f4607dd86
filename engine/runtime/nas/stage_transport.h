#pragma once
// A supernet stage's traffic with its neighbours over c10d Gloo
// point-to-point: activations down, gradients up (csp_trainer.cpp).
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/nas/csp_policy.h"

namespace pw::rt::nas {

inline constexpr int kActivationTag = 1, kGradientTag = 2;

// What the receiver threads of one stage deliver (one queue per channel),
// with one condition variable so the trainer can sleep until anything
// arrives instead of polling.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<at::Tensor> queue[2];
  bool any() const { return !queue[0].empty() || !queue[1].empty(); }
  void wait_until(std::chrono::steady_clock::time_point until) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_until(lock, until, [&] { return any(); });
  }
};

// One direction of traffic with a neighbour: tensors of a fixed shape, the
// subnet id riding in the last element. Gloo p2p work cannot be polled
// (isCompleted() only turns true inside wait()), so a receiver thread
// blocks on each recv in turn and queues what arrives; sends are kept
// until drained.
class TensorChannel {
 public:
  TensorChannel(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int peer, int tag, std::int64_t numel, int expected,
                std::shared_ptr<Inbox> inbox = nullptr, int slot = 0)
      : pg_(std::move(pg)), peer_(peer), tag_(tag), numel_(numel), in_(std::move(inbox)), slot_(slot) {
    if (expected > 0)
      thread_ = std::thread([pg = pg_, in = in_, peer, tag, numel, expected, slot] {
        for (int i = 0; i < expected; ++i) {
          at::Tensor buf = at::empty({numel + 1}, at::kFloat);
          std::vector<at::Tensor> v{buf};
          try {
            pg->recv(v, peer, tag)->wait();
          } catch (...) {
            return;  // the peer failed; the trainer reports its own error or times out
          }
          {
            std::lock_guard<std::mutex> lock(in->mu);
            in->queue[slot].push_back(buf);
          }
          in->cv.notify_all();
        }
      });
  }
  ~TensorChannel() {
    if (!thread_.joinable()) return;
    // Unwinding from an error: the peer may never send again, so do not
    // wait for it (the thread owns what it touches; the process exits).
    if (std::uncaught_exceptions() > 0) thread_.detach();
    else thread_.join();
  }
  void send(int id, const at::Tensor& t) {
    at::Tensor buf = at::empty({numel_ + 1}, at::kFloat);
    buf.narrow(0, 0, numel_).copy_(t.reshape({-1}));
    buf[numel_] = static_cast<float>(id);
    std::vector<at::Tensor> v{buf};
    sends_.push_back({pg_->send(v, peer_, tag_), buf});
  }
  bool poll(int* id, at::Tensor* out) {
    std::lock_guard<std::mutex> lock(in_->mu);
    auto& q = in_->queue[slot_];
    if (q.empty()) return false;
    at::Tensor buf = q.front();
    q.pop_front();
    *id = static_cast<int>(buf[numel_].item<float>());
    *out = buf.narrow(0, 0, numel_);
    return true;
  }
  void drain() {
    for (auto& s : sends_) s.first->wait();
    sends_.clear();
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  int peer_, tag_;
  std::int64_t numel_;
  std::shared_ptr<Inbox> in_;
  int slot_;
  std::thread thread_;
  std::deque<std::pair<c10::intrusive_ptr<c10d::Work>, at::Tensor>> sends_;
};

// Activations down and gradients up, to and from the neighbouring stages:
// the stage's only traffic with other processes. What arrives is kept here
// until its action takes it and is announced to the policy.
class StageTransport {
 public:
  StageTransport(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int stage, int stages, std::vector<std::int64_t> shape,
                 int expected)
      : shape_(std::move(shape)), inbox_(std::make_shared<Inbox>()) {
    std::int64_t numel = 1;
    for (auto d : shape_) numel *= d;
    const int s = stage, p = stages;
    if (s > 0) act_in_ = std::make_unique<TensorChannel>(pg, s - 1, kActivationTag, numel, expected, inbox_, 0);
    if (s + 1 < p) act_out_ = std::make_unique<TensorChannel>(pg, s + 1, kActivationTag, numel, 0);
    if (s + 1 < p) grad_in_ = std::make_unique<TensorChannel>(pg, s + 1, kGradientTag, numel, expected, inbox_, 1);
    if (s > 0) grad_out_ = std::make_unique<TensorChannel>(pg, s - 1, kGradientTag, numel, 0);
  }
  // Everything received so far, activations first, into the policy.
  void deliver(pw::nas::CspStage& csp) {
    int id;
    at::Tensor t;
    while (act_in_ && act_in_->poll(&id, &t)) {
      activations_[id] = t.reshape(shape_).clone();
      csp.forward_ready(id);
    }
    while (grad_in_ && grad_in_->poll(&id, &t)) {
      gradients_[id] = t.reshape(shape_).clone();
      csp.backward_ready(id);
    }
  }
  at::Tensor take_activation(int b) { return take(activations_, b); }
  at::Tensor take_gradient(int b) { return take(gradients_, b); }
  // The lowest subnet whose activation waits here (-1: none): the racing baseline's next forward.
  int first_activation() const { return activations_.empty() ? -1 : activations_.begin()->first; }
  void send_activation(int b, const at::Tensor& t) { act_out_->send(b, t); }
  void send_gradient(int b, const at::Tensor& t) { grad_out_->send(b, t); }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  // Only an arrival can make work for an idle stage: sleep until one. The
  // timeout is a safety net, not a poll.
  void sleep_until_arrival() { inbox_->wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(200)); }
  void drain() {
    if (act_out_) act_out_->drain();
    if (grad_out_) grad_out_->drain();
  }

 private:
  static at::Tensor take(std::map<int, at::Tensor>& m, int b) {
    at::Tensor t = m[b];
    m.erase(b);
    return t;
  }
  std::vector<std::int64_t> shape_;
  std::shared_ptr<Inbox> inbox_;
  std::unique_ptr<TensorChannel> act_in_, act_out_, grad_in_, grad_out_;
  std::map<int, at::Tensor> activations_, gradients_;
};

}  // namespace pw::rt::nas
