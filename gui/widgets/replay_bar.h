#pragma once
#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

class QComboBox;
class QLabel;
class QSlider;
class QToolButton;

namespace pw::gui {

class RunModel;

// Replay controls: a time slider over the run, play/pause and speed. The
// cursor it emits is the time every view shows; "Live" (cursor at the end,
// following new data) is the slider at its right end.
class ReplayBar : public QWidget {
  Q_OBJECT
 public:
  explicit ReplayBar(QWidget* parent = nullptr);
  void setRun(const RunModel* run);
  qint64 cursor() const { return cursor_; }  // INT64_MAX when live / at the end
  void setCursor(qint64 t_ns);               // clamps; emits cursorChanged
  void setSpeed(double x);
  double speed() const { return speed_; }
  bool isPlaying() const { return timer_.isActive(); }

 public slots:
  void play();
  void pause();
  void togglePlay();
  void goLive();

 signals:
  void cursorChanged(qint64 t_ns);

 private:
  void tick();
  void syncSlider();
  const RunModel* run_ = nullptr;
  QToolButton* play_;
  QToolButton* live_;
  QSlider* slider_;
  QComboBox* speed_box_;
  QLabel* time_;
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 cursor_ = INT64_MAX;
  double speed_ = 1.0;
};

}  // namespace pw::gui
