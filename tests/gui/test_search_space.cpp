// The designer's search-space pieces without widgets: the custom layers
// table, the job model's search-space validation and the supernet
// prediction.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QSignalSpy>

#include "gui/models/job_model.h"
#include "gui/models/prediction.h"
#include "gui/models/search_space_layers_model.h"

namespace pw::gui {
namespace {

nlohmann::json custom_layers() {
  return nlohmann::json::parse(R"([
    {"name": "enc", "repeat": 2, "candidates": [{"op": "attention", "heads": 8}, {"op": "conv", "kernel": 3}]},
    {"name": "mix", "candidates": [{"op": "uniform", "fwd_ms": 1.5}]},
    {"name": "empty", "candidates": []}
  ])");
}

nlohmann::json transformer_job(const nlohmann::json& space) {
  auto doc = JobModel::defaultDocument();
  doc["model"] = {{"kind", "transformer"}, {"encoder_layers", 2}, {"decoder_layers", 2}, {"hidden", 256},
                  {"heads", 4}, {"seq_len", 32}};
  doc["search_space"] = space;
  doc["pipeline"] = {{"stages", 2}, {"schedule", "csp"}};
  doc["cluster"]["devices"] = 2;
  return doc;
}

TEST(SearchSpaceLayersModel, PassesModelTesterThroughEdits) {
  SearchSpaceLayersModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.setLayers(custom_layers());
  // One row per candidate; a layer without candidates still has one.
  ASSERT_EQ(m.rowCount(), 4);
  EXPECT_EQ(m.data(m.index(0, SearchSpaceLayersModel::Layer)).toString(), "enc");
  EXPECT_EQ(m.data(m.index(0, SearchSpaceLayersModel::Repeat)).toInt(), 2);
  EXPECT_FALSE(m.data(m.index(1, SearchSpaceLayersModel::Layer)).isValid());  // the layer shows on its first row
  EXPECT_FALSE(m.flags(m.index(1, SearchSpaceLayersModel::Layer)) & Qt::ItemIsEditable);
  EXPECT_EQ(m.data(m.index(1, SearchSpaceLayersModel::Kernel)).toInt(), 3);
  EXPECT_EQ(m.data(m.index(2, SearchSpaceLayersModel::Other)).toString(), "fwd_ms: 1.5");
  EXPECT_FALSE(m.flags(m.index(3, SearchSpaceLayersModel::Op)) & Qt::ItemIsEditable);
  EXPECT_EQ(m.rowOf(1, 0), 2);
  EXPECT_EQ(m.candidateOf(3), -1);

  QSignalSpy edited(&m, &SearchSpaceLayersModel::edited);
  EXPECT_TRUE(m.setData(m.index(1, SearchSpaceLayersModel::Kernel), 5));
  EXPECT_EQ(m.layers()[0]["candidates"][1]["kernel"], 5);
  EXPECT_TRUE(m.setData(m.index(0, SearchSpaceLayersModel::Heads), 0));  // 0: the key goes, the default applies
  EXPECT_FALSE(m.layers()[0]["candidates"][0].contains("heads"));
  EXPECT_TRUE(m.setData(m.index(2, SearchSpaceLayersModel::Op), "glu"));
  EXPECT_EQ(m.layers()[1]["candidates"][0]["fwd_ms"], 1.5);  // keys without a column stay
  EXPECT_EQ(edited.count(), 3);

  m.addCandidate(2);  // into the empty layer: a copy of the last candidate before it
  ASSERT_EQ(m.rowCount(), 4);
  EXPECT_EQ(m.layers()[2]["candidates"].size(), 1u);
  m.addLayer();
  EXPECT_EQ(m.rowCount(), 5);
  EXPECT_EQ(m.layers()[3]["name"], "layer3");
  m.removeCandidate(0, 0);
  EXPECT_EQ(m.layers()[0]["candidates"].size(), 1u);
  m.removeLayer(0);
  EXPECT_EQ(m.layers()[0]["name"], "mix");
  EXPECT_EQ(m.rowCount(), 3);
  EXPECT_EQ(edited.count(), 7);
  // Writing the same layers back (the document after an edit) resets nothing.
  QSignalSpy reset(&m, &QAbstractItemModel::modelReset);
  m.setLayers(m.layers());
  EXPECT_EQ(reset.count(), 0);
}

TEST(SearchSpaceLayersModel, PutsAParserErrorAtTheCellItNames) {
  SearchSpaceLayersModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.setLayers(custom_layers());
  EXPECT_TRUE(m.setError("[0].candidates[1].kernel", "must be >= 1, got -1"));
  EXPECT_EQ(m.errorAt(1, SearchSpaceLayersModel::Kernel), "must be >= 1, got -1");
  EXPECT_EQ(m.data(m.index(1, SearchSpaceLayersModel::Kernel), Qt::ToolTipRole).toString(), "must be >= 1, got -1");
  EXPECT_TRUE(m.errorAt(0, SearchSpaceLayersModel::Kernel).isEmpty());
  EXPECT_TRUE(m.setError("[1].candidates[0].fwd_ms", "must be >= 0"));
  EXPECT_FALSE(m.errorAt(2, SearchSpaceLayersModel::Other).isEmpty());
  EXPECT_TRUE(m.setError("[2].candidates", "must be a non-empty array of candidate ops"));
  EXPECT_FALSE(m.errorAt(3, SearchSpaceLayersModel::Op).isEmpty());
  EXPECT_TRUE(m.setError("[0].repeat", "must be >= 1"));
  EXPECT_FALSE(m.errorAt(0, SearchSpaceLayersModel::Repeat).isEmpty());
  EXPECT_FALSE(m.setError("[7].name", "no such layer"));
  m.clearErrors();
  EXPECT_TRUE(m.errorAt(1, SearchSpaceLayersModel::Kernel).isEmpty());
}

TEST(JobModel, ReportsSearchSpaceErrorsWithTheirPaths) {
  JobModel job;
  auto space = nlohmann::json{{"window", 0}, {"layers", custom_layers()}};
  space["layers"].erase(2);
  space["layers"][1]["candidates"][0] = {{"op", "attention"}, {"heads", 4}};
  space["layers"][0]["candidates"][1]["kernel"] = -1;
  job.setDocument(transformer_job(space));
  EXPECT_FALSE(job.isValid());
  QStringList paths;
  for (const auto& e : job.errors()) paths << e.path;
  // Every error at once, the ones inside the layers included.
  EXPECT_TRUE(paths.contains("search_space.window")) << paths.join(", ").toStdString();
  EXPECT_TRUE(paths.contains("search_space.layers[0].candidates[1].kernel")) << paths.join(", ").toStdString();
  space["window"] = 4;
  space["layers"][0]["candidates"][1]["kernel"] = 3;
  job.setDocument(transformer_job(space));
  EXPECT_TRUE(job.isValid()) << job.errorPath().toStdString() << ": " << job.errorMessage().toStdString();
  // A builtin space's rule (odd kernels) is the core's.
  auto doc = transformer_job({{"builtin", "fmnist-cnn"}, {"kernels", {3, 4}}});
  doc["model"] = {{"kind", "cnn"}, {"channels", {8}}};
  job.setDocument(doc);
  ASSERT_FALSE(job.errors().isEmpty());
  EXPECT_EQ(job.errors().front().path, "search_space.kernels[1]");
  EXPECT_TRUE(job.errors().front().message.contains("odd"));
}

TEST(Prediction, ASupernetJobGetsTheSupernetSimulatorsModes) {
  auto space = nlohmann::json{{"layers", custom_layers()}};
  space["layers"].erase(2);
  space["layers"][1]["candidates"][0] = {{"op", "glu"}};
  JobModel job;
  job.setDocument(transformer_job(space));
  ASSERT_TRUE(job.isValid()) << job.errorMessage().toStdString();
  Prediction p = predict(*job.spec());
  ASSERT_TRUE(p.supernet.has_value());
  EXPECT_TRUE(p.outcomes.empty());  // the planners do not plan supernets
  ASSERT_TRUE(p.supernet->error.empty()) << p.supernet->error;
  ASSERT_GE(p.supernet->outcomes.size(), 2u);
  EXPECT_EQ(p.supernet->outcomes.front().mode, "csp");
  EXPECT_TRUE(p.supernet->outcomes.front().ok) << p.supernet->outcomes.front().error;
  EXPECT_GT(p.supernet->outcomes.front().result.subnets_per_s, 0);
  EXPECT_EQ(p.supernet->choice_layers, 3);  // enc repeated twice, then mix
  EXPECT_FALSE(p.supernet->events.empty());
  EXPECT_EQ(p.supernet->stages.size(), 2u);
}

}  // namespace
}  // namespace pw::gui
