#include "gui/widgets/replay_bar.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QToolButton>

#include "gui/models/planner_comparison_model.h"
#include "gui/models/run_model.h"

namespace pw::gui {
namespace {
constexpr int kSliderSteps = 10000;
}

ReplayBar::ReplayBar(QWidget* parent)
    : QWidget(parent),
      play_(new QToolButton(this)),
      live_(new QToolButton(this)),
      slider_(new QSlider(Qt::Horizontal, this)),
      speed_box_(new QComboBox(this)),
      time_(new QLabel(this)) {
  setObjectName(QStringLiteral("replayBar"));
  auto* lay = new QHBoxLayout(this);
  lay->setContentsMargins(4, 2, 4, 2);
  play_->setIcon(QIcon(QStringLiteral(":/icons/play.svg")));
  play_->setToolTip(tr("Play / pause the replay (Space)"));
  live_->setText(tr("End"));
  live_->setToolTip(tr("Jump to the end; live runs follow new data"));
  slider_->setRange(0, kSliderSteps);
  slider_->setValue(kSliderSteps);
  slider_->setToolTip(tr("Replay time: every view shows the run as it was at this moment"));
  for (double s : {0.01, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 16.0, 100.0})
    speed_box_->addItem(QStringLiteral("%1x").arg(s), s);
  speed_box_->setCurrentIndex(4);
  speed_box_->setToolTip(tr("Replay speed relative to the run's own clock"));
  time_->setMinimumWidth(170);
  time_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  lay->addWidget(play_);
  lay->addWidget(slider_, 1);
  lay->addWidget(live_);
  lay->addWidget(speed_box_);
  lay->addWidget(time_);
  timer_.setInterval(33);
  connect(&timer_, &QTimer::timeout, this, &ReplayBar::tick);
  connect(play_, &QToolButton::clicked, this, &ReplayBar::togglePlay);
  connect(live_, &QToolButton::clicked, this, &ReplayBar::goLive);
  connect(speed_box_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this](int i) { speed_ = speed_box_->itemData(i).toDouble(); });
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    if (!run_ || run_->isEmpty()) return;
    if (v >= kSliderSteps) {
      goLive();
      return;
    }
    qint64 t = run_->beginNs() + static_cast<qint64>((run_->endNs() - run_->beginNs()) * (v / double(kSliderSteps)));
    if (t == cursor_) return;
    cursor_ = t;
    syncSlider();
    emit cursorChanged(cursor_);
  });
  syncSlider();
}

void ReplayBar::setRun(const RunModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  pause();
  cursor_ = INT64_MAX;
  if (run_) connect(run_, &RunModel::changed, this, &ReplayBar::syncSlider);
  syncSlider();
}

void ReplayBar::setSpeed(double x) {
  speed_ = x;
  for (int i = 0; i < speed_box_->count(); ++i)
    if (std::abs(speed_box_->itemData(i).toDouble() - x) < 1e-9) speed_box_->setCurrentIndex(i);
}

void ReplayBar::setCursor(qint64 t) {
  if (!run_) return;
  if (t >= run_->endNs()) {
    goLive();
    return;
  }
  cursor_ = std::max<qint64>(t, run_->beginNs());
  syncSlider();
  emit cursorChanged(cursor_);
}

void ReplayBar::play() {
  if (!run_ || run_->isEmpty()) return;
  if (cursor_ == INT64_MAX) cursor_ = run_->beginNs();  // from the start
  clock_.start();
  timer_.start();
  play_->setIcon(QIcon(QStringLiteral(":/icons/pause.svg")));
  emit cursorChanged(cursor_);
}

void ReplayBar::pause() {
  timer_.stop();
  play_->setIcon(QIcon(QStringLiteral(":/icons/play.svg")));
}

void ReplayBar::togglePlay() { isPlaying() ? pause() : play(); }

void ReplayBar::goLive() {
  pause();
  cursor_ = INT64_MAX;
  syncSlider();
  emit cursorChanged(cursor_);
}

void ReplayBar::tick() {
  // Advance by the wall time since the last tick, not the nominal interval:
  // a busy GUI thread slows the frame rate, not the replay.
  qint64 wall_ns = clock_.nsecsElapsed();
  clock_.restart();
  qint64 t = cursor_ + static_cast<qint64>(wall_ns * speed_);
  if (t >= run_->endNs()) {
    goLive();
    return;
  }
  cursor_ = t;
  syncSlider();
  emit cursorChanged(cursor_);
}

void ReplayBar::syncSlider() {
  QSignalBlocker block(slider_);
  if (!run_ || run_->isEmpty()) {
    slider_->setValue(kSliderSteps);
    time_->setText(tr("no run"));
    return;
  }
  const double span = static_cast<double>(run_->endNs() - run_->beginNs());
  if (cursor_ == INT64_MAX) {
    slider_->setValue(kSliderSteps);
    time_->setText(tr("%1 %2").arg(format_duration_ns(span), run_->finished() ? tr("(end)") : tr("(live)")));
  } else {
    slider_->setValue(static_cast<int>(kSliderSteps * (cursor_ - run_->beginNs()) / std::max(1.0, span)));
    time_->setText(tr("%1 / %2").arg(format_duration_ns(static_cast<double>(cursor_ - run_->beginNs())), format_duration_ns(span)));
  }
}

}  // namespace pw::gui
