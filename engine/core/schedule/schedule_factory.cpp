// make_schedule: every kind by name, above the files that build each (the
// basic orders in schedule.cpp, the zero-bubble family, the controllable-
// memory V's, the generator), so none of those calls back into the factory
// and the schedule folder has no cycle (issue 42).
#include <stdexcept>
#include <string>

#include "core/schedule/controllable_memory.h"
#include "core/schedule/generated_order.h"
#include "core/schedule/schedule.h"
#include "core/schedule/zero_bubble.h"

namespace pw {

std::unique_ptr<Schedule> make_schedule(ScheduleKind kind, int devices, int microbatches, int chunks) {
  if (devices < 1) throw std::invalid_argument("schedule needs >= 1 device, got " + std::to_string(devices));
  if (microbatches < 1) throw std::invalid_argument("schedule needs >= 1 microbatch, got " + std::to_string(microbatches));
  switch (kind) {
    case ScheduleKind::GPipe: return make_gpipe(devices, microbatches);
    case ScheduleKind::OneFOneB: return make_one_f_one_b(devices, microbatches);
    case ScheduleKind::PipeDream: return make_pipedream(devices, microbatches);
    case ScheduleKind::Interleaved: return make_interleaved(devices, microbatches, chunks);
    case ScheduleKind::ZBH1: return make_zb_h1(devices, microbatches);
    case ScheduleKind::ZBH2: return make_zb_h2(devices, microbatches);
    case ScheduleKind::ZBV:
    case ScheduleKind::DualPipeV:
    case ScheduleKind::VHalf:
    case ScheduleKind::VMin:
      if (chunks != 2)
        throw std::invalid_argument(to_string(kind) + " places exactly 2 chunks per device (a V), got " +
                                    std::to_string(chunks));
      if (kind == ScheduleKind::VHalf) return make_v_half(devices, microbatches);
      if (kind == ScheduleKind::VMin) return make_v_min(devices, microbatches);
      return kind == ScheduleKind::ZBV ? make_zb_v(devices, microbatches) : make_dualpipe_v(devices, microbatches);
    case ScheduleKind::Generated: return make_generated(devices, microbatches, chunks);
    case ScheduleKind::CSP:
      throw std::invalid_argument("CSP is a dynamic schedule; it is driven by the supernet scheduler");
  }
  throw std::invalid_argument("unknown schedule kind");
}

}  // namespace pw
