#pragma once
#include <string>

#include "gui/models/run_source.h"

namespace pw::gui {

struct PredictionSource;

// The predicted timeline's inputs as the run recorded them (its job,
// profile and plans), or why there are none. Reads the file: call it on a worker.
PredictionSource recorded_prediction(const std::string& path);

// A recorded run (pw_db RunReader) read on the worker thread in large
// batches. A file still being written (status running) is followed: new
// rows are picked up every 200 ms until the run ends or the source stops.
class DbRunSource final : public RunSource {
  Q_OBJECT
 public:
  // wait_ms > 0: the file may not exist yet (an engine just launched);
  // wait that long for it before giving up. `replica`: the data-parallel
  // replica whose pipeline is read (the others' events are skipped here,
  // on the worker).
  explicit DbRunSource(std::string path, int wait_ms = 0, QObject* parent = nullptr, int replica = 0);
  ~DbRunSource() override;
  QString description() const override;
  const std::string& path() const { return path_; }
  int replica() const { return replica_; }

 protected:
  void run() override;

 private:
  std::string path_;
  int wait_ms_ = 0;
  int replica_ = 0;
};

}  // namespace pw::gui
