#include <QCoreApplication>
#include <gtest/gtest.h>

// Sources signal across threads and models use QObject: a core
// application exists for the whole run (no widgets, no display).
int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
