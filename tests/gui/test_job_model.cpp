#include <gtest/gtest.h>

#include <QSignalSpy>
#include <QTemporaryDir>

#include "gui/models/job_model.h"
#include "gui/models/prediction.h"

namespace pw::gui {
namespace {

TEST(JobModel, DefaultIsValid) {
  JobModel m;
  EXPECT_TRUE(m.isValid()) << m.errorPath().toStdString() << ": " << m.errorMessage().toStdString();
  EXPECT_EQ(m.value("pipeline.stages").toInt(), 4);
}

TEST(JobModel, ErrorNamesTheField) {
  JobModel m;
  QSignalSpy spy(&m, &JobModel::changed);
  m.setValue("pipeline.stages", 9);  // more than cluster.devices
  EXPECT_EQ(spy.count(), 1);
  EXPECT_FALSE(m.isValid());
  EXPECT_EQ(m.errorPath(), "pipeline.stages");
  EXPECT_TRUE(m.errorMessage().contains("cluster.devices"));
  m.setValue("cluster.devices", 9);
  m.setValue("training.batch_size", 500);  // not a multiple of 64
  EXPECT_EQ(m.errorPath(), "training.batch_size");
  m.setValue("training.batch_size", 512);
  EXPECT_TRUE(m.isValid());
  EXPECT_EQ(m.spec()->pipeline.stages, 9);
}

TEST(JobModel, RemovingAndRetainingKeys) {
  JobModel m;
  m.setValue("model.kind", QStringLiteral("uniform"));
  EXPECT_FALSE(m.isValid());  // bert fields are unknown to uniform
  m.retainKeys("model", {"kind", "layers"});
  m.setValue("model.fwd_ms", 1.0);
  m.setValue("model.bwd_ms", 2.0);
  m.setValue("model.activation_mb", 4.0);
  EXPECT_TRUE(m.isValid()) << m.errorPath().toStdString() << ": " << m.errorMessage().toStdString();
  m.setValue("model.fwd_ms", QVariant());
  EXPECT_EQ(m.errorPath(), "model.fwd_ms");
}

TEST(JobModel, SaveAndLoadRoundTrip) {
  QTemporaryDir dir;
  JobModel a;
  a.setValue("name", QStringLiteral("roundtrip"));
  QString err;
  ASSERT_TRUE(a.save(dir.filePath("job.json"), &err)) << err.toStdString();
  JobModel b;
  ASSERT_TRUE(b.load(dir.filePath("job.json"), &err)) << err.toStdString();
  EXPECT_EQ(b.document(), a.document());
  EXPECT_FALSE(b.isModified());
  EXPECT_FALSE(b.load(dir.filePath("missing.json"), &err));
  EXPECT_TRUE(err.contains("missing.json"));
}

TEST(Prediction, ChosenPlannerFirstAndEveryPlannerPresent) {
  JobModel m;
  Prediction p = predict(*m.spec());
  ASSERT_FALSE(p.outcomes.empty());
  EXPECT_EQ(p.outcomes[0].planner, "uniform");
  EXPECT_EQ(p.layers, static_cast<int>(p.layer_names.size()));
  ASSERT_TRUE(p.outcomes[0].ok) << p.outcomes[0].error;
  const auto& it = p.outcomes[0].iteration;
  EXPECT_EQ(static_cast<int>(it.plan.plan.stages.size()), 4);
  EXPECT_GT(it.result.throughput_samples_per_s, 0);
  EXPECT_FALSE(it.events.empty());
}

}  // namespace
}  // namespace pw::gui
