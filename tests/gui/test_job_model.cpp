#include <gtest/gtest.h>

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "core/spec/spec_error.h"
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

// The core parser stops at the first problem; the model finds every
// independent one, each with the parser's own path and reason.
TEST(JobModel, EveryErrorAtOnce) {
  JobModel m;
  auto doc = JobModel::defaultDocument();
  doc["training"]["lr"] = -1;
  doc["cluster"]["devices"] = 0;
  doc["pipeline"]["schedule"] = "sideways";
  doc["pipeline"]["bogus"] = 1;
  m.setDocument(doc);
  ASSERT_FALSE(m.isValid());
  QStringList paths;
  for (const auto& e : m.errors()) paths << e.path;
  paths.sort();
  EXPECT_EQ(paths, QStringList({"cluster.devices", "pipeline.bogus", "pipeline.schedule", "training.lr"}))
      << paths.join(", ").toStdString();
  // Each message is what parse_job says about that field alone.
  for (const auto& e : m.errors()) {
    auto single = JobModel::defaultDocument();
    auto ptr = nlohmann::json::json_pointer("/" + e.path.toStdString().replace(e.path.indexOf('.'), 1, "/"));
    single[ptr] = doc[ptr];
    try {
      parse_job(single);
      ADD_FAILURE() << e.path.toStdString() << " alone parses";
    } catch (const SpecError& x) {
      EXPECT_EQ(QString::fromStdString(x.path()), e.path);
      EXPECT_EQ(QString::fromStdString(x.reason()), e.message);
    }
  }
  EXPECT_EQ(m.errorPath(), m.errors().front().path);
  // Fixing one leaves the others.
  m.setValue("training.lr", 0.001);
  EXPECT_EQ(m.errors().size(), 3);
  m.setValue("cluster.devices", 4);
  m.setValue("pipeline.schedule", QStringLiteral("gpipe"));
  m.setValue("pipeline.bogus", QVariant());
  EXPECT_TRUE(m.isValid());
  EXPECT_TRUE(m.errors().isEmpty());
}

// A wrong kind: the fields that only make sense for the intended kind are
// not reported as errors of some other kind.
TEST(JobModel, WrongKindReportsTheKindOnly) {
  JobModel m;
  auto doc = JobModel::defaultDocument();
  doc["model"]["kind"] = "bertt";
  doc["training"]["iterations"] = 0;
  m.setDocument(doc);
  QStringList paths;
  for (const auto& e : m.errors()) paths << e.path;
  EXPECT_EQ(paths, QStringList({"model.kind", "training.iterations"})) << paths.join(", ").toStdString();
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

// A job file nested 100,000 deep overflowed the stack when the model copied
// the document (issue 41, item 1's pattern in the studio): refused as the
// CLI refuses it, the model left as it was.
TEST(JobModel, ADeepJobFileIsRefusedNotCopied) {
  QTemporaryDir dir;
  QFile f(dir.filePath("deep.json"));
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write("{\"name\": ");
  f.write(QByteArray(100000, '['));
  f.write(QByteArray(100000, ']'));
  f.write("}");
  f.close();
  JobModel m;
  const auto before = m.document();
  QString err;
  EXPECT_FALSE(m.load(dir.filePath("deep.json"), &err));
  EXPECT_TRUE(err.contains("nested deeper than 64 levels")) << err.toStdString();
  EXPECT_EQ(m.document(), before);
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
