#pragma once
#include <QColor>
#include <QWidget>
#include <array>

#include "core/analysis/idle_attribution.h"

class QCustomPlot;
class QAction;
class QCPBars;
class QLabel;
class QTreeWidget;

namespace pw::gui {

class ExplainModel;
struct ExplainSuggestions;
class StageLabels;
class JobModel;

// One colour per idle cause, in the dock's bars and the timeline's highlight.
QColor idle_cause_color(IdleCause c);

// The Explain dock (docs/studio.md): per stage a stacked bar of compute and
// the idle causes (ExplainModel, computed off the GUI thread), a legend,
// and the suggestions for the run's job with an Apply button each. Clicking
// a bar segment selects that cause on that stage, clicking a legend entry
// the cause on every stage; clicking the selection again clears it.
class ExplainDock : public QWidget {
  Q_OBJECT
 public:
  ExplainDock(ExplainModel* model, JobModel* job, QWidget* parent = nullptr);

  QCustomPlot* plot() const { return plot_; }
  QTreeWidget* suggestionsView() const { return suggestions_; }
  // The report's notes on the advice (withheld suggestions, an unknown error).
  QLabel* notesLabel() const { return notes_; }
  QLabel* summaryLabel() const { return summary_; }
  ExplainModel* model() const { return model_; }
  // The bars of a cause (index kIdleCauseCount: compute).
  QCPBars* bars(int series) const { return bars_[static_cast<std::size_t>(series)]; }
  // The bars' stage labels (laid out not to overlap at any stage count).
  const StageLabels* stageLabels() const { return stage_labels_; }

  // What clicking does, callable from tests: stage -1 = every stage.
  void selectCause(IdleCause cause, int stage);
  void clearCause();
  // Applies suggestion i to the designer's job (its Apply button).
  void applySuggestion(int i);
  // "Show predicted" (checkable): the simulator's timeline under the
  // measured one; disabled, its tooltip saying why, for a run without a
  // recorded job, profile and plan.
  QAction* showPredictedAction() const { return show_predicted_; }

 signals:
  void causeSelected(pw::IdleCause cause, int stage, QColor color);
  void causeCleared();
  void suggestionApplied(const QString& change);

 private:
  void refreshBars();
  void refreshSuggestions();
  void refreshPredictedAction();
  void showNotes(const ExplainSuggestions& s);

  ExplainModel* model_;
  JobModel* job_;
  QCustomPlot* plot_;
  QLabel* summary_;
  QTreeWidget* suggestions_;
  QLabel* notes_;
  StageLabels* stage_labels_ = nullptr;
  QAction* show_predicted_;
  std::array<QCPBars*, kIdleCauseCount + 1> bars_{};
  int selected_cause_ = -1, selected_stage_ = -1;
};

}  // namespace pw::gui
