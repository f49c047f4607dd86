#pragma once
#include <string>

#include "core/nas/subnet.h"
#include "runtime/nas/supernet_modules.h"

namespace pw::rt::nas {

// One subnet of a trained CNN supernet as a standalone TorchScript model
// (torch.jit.save): images [B,1,28,28] -> logits [B,classes], with the
// trained weights of its candidates and the frozen stem and head, running
// the same ATen operations as CnnSupernet, so it classifies exactly as the
// search scored it. Parameters are named stem_w, stem_b, cell<l>_w0.. and
// head_w, head_b. Throws std::runtime_error on a failed write.
void export_subnet_torchscript(const CnnSupernet& net, const pw::nas::Subnet& subnet, const std::string& out);

}  // namespace pw::rt::nas
