// plan --export-schedule's format (issue 28): torch.distributed.pipelining's
// compute_only CSV, one row per rank, read back into the same order for
// every family and shape; hand-checked cells for one small case; bad cells
// refused naming row and cell.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <stdexcept>

#include "core/schedule/schedule.h"
#include "core/schedule/torch_actions.h"

using namespace pw;

TEST(TorchActions, ReadsBackIntoTheSameOrder) {
  int checked = 0;
  // PyTorch's own pattern for a cell (schedules.py, _action_regex), anchored.
  const std::regex cell(R"((\d+)(F|I|B|W)(\d+))");
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved, ScheduleKind::ZBH1,
                         ScheduleKind::ZBH2, ScheduleKind::ZBV, ScheduleKind::DualPipeV, ScheduleKind::Generated})
    for (int p = 1; p <= 5; ++p)
      for (int m = 1; m <= 11; m += 2) {
        int chunks = k == ScheduleKind::Interleaved ? 2 : (k == ScheduleKind::ZBV || k == ScheduleKind::DualPipeV) ? 2 : 1;
        std::unique_ptr<Schedule> s;
        try {
          s = make_schedule(k, p, m, chunks);
        } catch (const std::invalid_argument&) {
          continue;
        }
        const std::string csv = torch_schedule_csv(*s);
        std::istringstream in(csv);
        std::string line, c;
        int rows = 0;
        while (std::getline(in, line)) {
          ++rows;
          if (!line.empty() && line.back() == '\r') line.pop_back();
          std::istringstream cells(line);
          while (std::getline(cells, c, ',')) EXPECT_TRUE(std::regex_match(c, cell)) << c;
        }
        EXPECT_EQ(rows, p);
        auto back = parse_torch_schedule_csv(csv, *s);
        ASSERT_EQ(static_cast<int>(back.size()), p);
        for (int d = 0; d < p; ++d) {
          ASSERT_EQ(static_cast<std::int64_t>(back[d].size()), s->length(d)) << to_string(k) << " p=" << p << " m=" << m;
          for (std::int64_t i = 0; i < s->length(d); ++i) {
            Action a = s->action(d, i), b = back[d][i];
            EXPECT_EQ(a.kind, b.kind);
            EXPECT_EQ(a.microbatch, b.microbatch);
            EXPECT_EQ(a.chunk, b.chunk);
          }
        }
        ++checked;
      }
  EXPECT_GT(checked, 200);
}

// ZB-H1 on 2 devices, 2 microbatches, by hand (zero_bubble.cpp's rule:
// device d defers W of microbatch k past B of k+d); the V names the global
// stage: device 0 of a 2-device ZB-V runs stages 0 and 3.
TEST(TorchActions, HandCheckedCells) {
  auto s = make_schedule(ScheduleKind::ZBH1, 2, 2, 1);
  EXPECT_EQ(torch_schedule_csv(*s), "0F0,0F1,0I0,0W0,0I1,0W1\r\n1F0,1I0,1F1,1I1,1W0,1W1\r\n");
  auto v = make_schedule(ScheduleKind::ZBV, 2, 1, 2);
  const std::string csv = torch_schedule_csv(*v);
  EXPECT_EQ(csv.substr(0, csv.find('\r')).find("3F0") != std::string::npos, true) << csv;
}

TEST(TorchActions, RefusesWhatItCannotRead) {
  auto s = make_schedule(ScheduleKind::OneFOneB, 2, 2, 1);
  EXPECT_THROW(parse_torch_schedule_csv("0F0,0X1\n1F0\n", *s), std::invalid_argument);
  EXPECT_THROW(parse_torch_schedule_csv("1F0\n1F0\n", *s), std::invalid_argument);  // stage 1 is not on rank 0
  EXPECT_THROW(parse_torch_schedule_csv("0F0\n", *s), std::invalid_argument);        // one row for two ranks
  EXPECT_THROW(parse_torch_schedule_csv("0F7\n1F0\n", *s), std::invalid_argument);   // microbatch 7 of 2
  try {
    parse_torch_schedule_csv("0F0,0Q1\n1F0\n", *s);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row 1, cell 2"), std::string::npos) << e.what();
  }
  auto async = make_schedule(ScheduleKind::PipeDream, 2, 2, 1);
  EXPECT_THROW(torch_schedule_csv(*async), std::invalid_argument);
}
