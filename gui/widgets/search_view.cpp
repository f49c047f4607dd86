#include "gui/widgets/search_view.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFileDialog>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QtConcurrent/QtConcurrentRun>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "gui/models/search_model.h"
#include "gui/widgets/theme.h"
#ifdef PW_STUDIO_HAVE_DB
#include "gui/sources/db_search_loader.h"
#endif

namespace pw::gui {
namespace {
const QColor kPoints(150, 150, 150), kFront(76, 155, 232), kCompare(232, 140, 60), kSelected(220, 50, 50);

std::vector<SearchRun> read(const QString& path, QString* error) {
#ifdef PW_STUDIO_HAVE_DB
  try {
    return load_searches(path);
  } catch (const std::exception& e) {
    *error = QString::fromStdString(e.what());
    return {};
  }
#else
  *error = QObject::tr("this studio was built without run database support");
  return {};
#endif
}

int latest_evolution(const std::vector<SearchRun>& runs) {
  int k = static_cast<int>(runs.size()) - 1;
  for (int i = 0; i < static_cast<int>(runs.size()); ++i)
    if (runs[i].label.endsWith(QStringLiteral("(evolution)"))) k = i;
  return k;
}
}  // namespace

SearchView::SearchView(QWidget* parent)
    : QWidget(parent),
      model_(new SearchModel(this)),
      picker_(new QComboBox(this)),
      plot_(new QCustomPlot(this)),
      table_(new QTableView(this)),
      selection_(new QLabel(this)),
      command_(new QLineEdit(this)) {
  setObjectName(QStringLiteral("search"));
  auto* lay = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  auto* open = new QPushButton(tr("Open run…"), this);
  auto* compare = new QPushButton(tr("Compare with…"), this);
  bar->addWidget(open);
  bar->addWidget(picker_, 1);
  bar->addWidget(compare);
  lay->addLayout(bar);
  auto* split = new QSplitter(Qt::Vertical, this);
  plot_->setObjectName(QStringLiteral("searchPlot"));
  plot_->setMinimumHeight(240);
  plot_->xAxis->setLabel(tr("predicted latency (ms per microbatch)"));
  plot_->yAxis->setLabel(tr("accuracy"));
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
  style_plot(plot_);
  split->addWidget(plot_);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  proxy->setSortRole(Qt::UserRole);
  table_->setModel(proxy);
  table_->setSortingEnabled(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setStretchLastSection(true);
  split->addWidget(table_);
  lay->addWidget(split, 1);
  selection_->setWordWrap(true);
  lay->addWidget(selection_);
  auto* cmd = new QHBoxLayout;
  command_->setReadOnly(true);
  command_->setObjectName(QStringLiteral("exportCommand"));
  auto* copy = new QPushButton(tr("Copy"), this);
  cmd->addWidget(new QLabel(tr("Export:"), this));
  cmd->addWidget(command_, 1);
  cmd->addWidget(copy);
  lay->addLayout(cmd);

  connect(open, &QPushButton::clicked, this, [this] {
    QString f = QFileDialog::getOpenFileName(this, tr("Open a searched run"), {}, tr("Run databases (*.sqlite)"));
    if (!f.isEmpty()) openDatabase(f);
  });
  connect(compare, &QPushButton::clicked, this, [this] {
    QString f = QFileDialog::getOpenFileName(this, tr("Compare with a searched run"), {}, tr("Run databases (*.sqlite)"));
    if (!f.isEmpty()) openComparison(f);
  });
  connect(picker_, &QComboBox::currentIndexChanged, this, &SearchView::showSearch);
  connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(command_->text()); });
  connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
    if (e->button() != Qt::LeftButton || model_->rowCount() == 0) return;
    selectRow(model_->nearestRow(plot_->xAxis->pixelToCoord(e->position().x()),
                                 plot_->yAxis->pixelToCoord(e->position().y())));
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this, proxy](const QModelIndex& cur) {
            int row = cur.isValid() ? proxy->mapToSource(cur).row() : -1;
            if (row != selected_) selectRow(row);
          });
  connect(model_, &SearchModel::comparisonChanged, this, [this] {
    refresh();
    fitAxes();
  });
  selectRow(-1);
}

void SearchView::openDatabase(const QString& path) { load(path, false); }
void SearchView::openComparison(const QString& path) { load(path, true); }

void SearchView::load(const QString& path, bool comparison) {
  struct Read {
    std::vector<SearchRun> runs;
    QString error;
  };
  const int ticket = ++ticket_;
  auto* watcher = new QFutureWatcher<Read>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, ticket, path, comparison] {
    Read r = watcher->result();
    watcher->deleteLater();
    if (ticket != ticket_) return;
    emit loaded(comparison ? showComparison(path, r.runs, r.error) : showDatabase(path, std::move(r.runs), r.error));
  });
  watcher->setFuture(QtConcurrent::run([path] {
    Read r;
    r.runs = read(path, &r.error);
    return r;
  }));
}

bool SearchView::showDatabase(const QString& path, std::vector<SearchRun> runs, const QString& error) {
  searches_ = std::move(runs);
  picker_->blockSignals(true);
  picker_->clear();
  for (const auto& s : searches_) picker_->addItem(s.label);
  picker_->blockSignals(false);
  if (searches_.empty()) {
    model_->setRun({});
    selection_->setText(error.isEmpty() ? tr("%1 holds no search: run pipewright search %1").arg(path) : error);
    refresh();
    return false;
  }
  int k = latest_evolution(searches_);
  picker_->setCurrentIndex(k);
  showSearch(k);
  return true;
}

bool SearchView::showComparison(const QString& path, const std::vector<SearchRun>& runs, const QString& error) {
  if (runs.empty()) {
    selection_->setText(error.isEmpty() ? tr("%1 holds no search to compare with").arg(path) : error);
    return false;
  }
  model_->setComparison(runs[latest_evolution(runs)]);
  return true;
}

void SearchView::showSearch(int index) {
  if (index < 0 || index >= static_cast<int>(searches_.size())) return;
  model_->setRun((searches_)[index]);
  selected_ = -1;
  selectRow(-1);
  refresh();
  fitAxes();
}

// Every point in view with a margin, so none sits on the axis rect's edge.
void SearchView::fitAxes() {
  plot_->rescaleAxes();
  plot_->xAxis->scaleRange(1.1);
  plot_->yAxis->scaleRange(1.1);
  plot_->replot();
}

void SearchView::selectRow(int row) {
  selected_ = row;
  selection_->setText(model_->describe(row));
  command_->setText(model_->exportCommand(row));
  if (row >= 0) {
    auto* proxy = static_cast<QSortFilterProxyModel*>(table_->model());
    QModelIndex src = model_->index(row, 0);
    table_->selectionModel()->setCurrentIndex(proxy->mapFromSource(src), QItemSelectionModel::ClearAndSelect |
                                                                            QItemSelectionModel::Rows);
  }
  refresh();
}

QString SearchView::exportCommand() const { return command_->text(); }

void SearchView::refresh() {
  plot_->clearGraphs();
  auto scatter = [&](const QString& name, const QColor& c, QCPScatterStyle::ScatterShape shape, double size) {
    auto* g = plot_->addGraph();
    g->setName(name);
    g->setLineStyle(QCPGraph::lsNone);
    g->setScatterStyle(QCPScatterStyle(shape, c, size));
    return g;
  };
  auto line = [&](const QString& name, const QColor& c, const std::vector<QPointF>& pts) {
    if (pts.empty()) return;
    auto* g = plot_->addGraph();
    g->setName(name);
    g->setPen(QPen(c, 2));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, c, 6));
    // A front is a curve along latency, not a function of it: keep its order.
    QVector<QCPGraphData> d;
    for (const auto& p : pts) d.append({p.x(), p.y()});
    g->data()->set(d, true);
  };
  const auto& pts = model_->run().points;
  if (!pts.empty()) {
    auto* all = scatter(tr("subnets"), kPoints, QCPScatterStyle::ssCircle, 5);
    for (const auto& p : pts) all->addData(p.latency_ms, p.accuracy);
  }
  line(tr("front: %1").arg(model_->run().label), kFront, model_->frontLine());
  line(tr("front: %1").arg(model_->comparison().label), kCompare, model_->comparisonFrontLine());
  if (selected_ >= 0 && selected_ < static_cast<int>(pts.size())) {
    auto* sel = scatter(tr("selected"), kSelected, QCPScatterStyle::ssCircle, 11);
    sel->addData(pts[selected_].latency_ms, pts[selected_].accuracy);
  }
  plot_->replot();
}

}  // namespace pw::gui
