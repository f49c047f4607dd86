#include "gui/models/run_source.h"

#include <exception>

namespace pw::gui {

RunSource::RunSource(QObject* parent) : QObject(parent) {}

RunSource::~RunSource() { stop(); }

void RunSource::start() {
  stop();
  stop_ = false;
  running_ = true;
  thread_ = std::thread([this] {
    try {
      run();
    } catch (const std::exception& e) {
      emit failed(QString::fromStdString(e.what()));
    }
    running_ = false;
    emit finished();
  });
}

void RunSource::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void RunSource::publish(RunBatch&& batch) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.push_back(std::move(batch));
}

std::vector<RunBatch> RunSource::take() {
  std::vector<RunBatch> out;
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(pending_);
  return out;
}

}  // namespace pw::gui
