#include "gui/sources/db_search_loader.h"

#include "db/run_reader.h"

namespace pw::gui {

std::vector<SearchRun> load_searches(const QString& path) {
  db::RunReader rd(path.toStdString());
  std::vector<SearchRun> out;
  for (const auto& s : rd.searches()) {
    SearchRun r;
    r.db_path = path;
    r.label = QStringLiteral("%1: search %2 (%3)")
                  .arg(QString::fromStdString(rd.run().name))
                  .arg(s.id)
                  .arg(QString::fromStdString(s.method));
    for (const auto& x : s.subnets) r.points.push_back({x.id, x.choices, x.accuracy, x.latency_ms, x.parameters});
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace pw::gui
