#pragma once
#include <ATen/Tensor.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace pw::rt {

// Holds the buffers of asynchronous sends until they are complete, then
// frees them. Gloo's send work reports completion only once waited on, so
// polling cannot release them; a thread waits on them in order instead, and
// a sent activation stops counting as soon as the peer has taken it rather
// than at the optimizer step (for a recomputed or swapped stage nothing else
// holds its output).
class SendReaper {
 public:
  SendReaper() : s_(std::make_shared<Shared>()) {
    std::thread([s = s_] { s->loop(); }).detach();
  }
  ~SendReaper() {
    std::lock_guard<std::mutex> l(s_->m);
    s_->stop = true;
    s_->cv.notify_all();
  }
  SendReaper(const SendReaper&) = delete;
  SendReaper& operator=(const SendReaper&) = delete;

  void push(std::vector<at::Tensor> buf, c10::intrusive_ptr<c10d::Work> work) {
    std::lock_guard<std::mutex> l(s_->m);
    s_->q.push_back({std::move(buf), std::move(work)});
    s_->cv.notify_all();
  }
  // Blocks until every pushed send is complete; rethrows a send's error.
  void drain() {
    std::unique_lock<std::mutex> l(s_->m);
    s_->cv.wait(l, [&] { return (s_->q.empty() && !s_->busy) || s_->error; });
    if (s_->error) std::rethrow_exception(s_->error);
  }

 private:
  struct Item {
    std::vector<at::Tensor> buf;
    c10::intrusive_ptr<c10d::Work> work;
  };
  // Shared with the detached thread, which may outlive the reaper when a
  // peer died with a send outstanding (the process is exiting then).
  struct Shared {
    std::mutex m;
    std::condition_variable cv;
    std::deque<Item> q;
    bool busy = false, stop = false;
    std::exception_ptr error;
    void loop() {
      std::unique_lock<std::mutex> l(m);
      for (;;) {
        cv.wait(l, [&] { return stop || !q.empty(); });
        if (q.empty()) return;
        Item it = std::move(q.front());
        q.pop_front();
        busy = true;
        l.unlock();
        std::exception_ptr err;
        try {
          it.work->wait();
        } catch (...) {
          err = std::current_exception();
        }
        it = Item();  // frees the buffer outside the lock
        l.lock();
        busy = false;
        if (err && !error) error = err;
        cv.notify_all();
      }
    }
  };
  std::shared_ptr<Shared> s_;
};

}  // namespace pw::rt
