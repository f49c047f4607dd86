#include "runtime/nas/subnet_export.h"

#include <torch/csrc/jit/api/module.h>

#include <sstream>

#include "runtime/torchscript/torchscript_model.h"

namespace pw::rt::nas {

void export_subnet_torchscript(const CnnSupernet& net, const pw::nas::Subnet& subnet, const std::string& out) {
  torch::jit::Module m("__torch__.PipewrightSubnet");
  auto param = [&](const std::string& name, const at::Tensor& t) {
    m.register_parameter(name, t.detach().clone(), /*is_buffer=*/false);
  };
  param("stem_w", net.stem_params().first);
  param("stem_b", net.stem_params().second);
  // The source mirrors CnnSupernet::stem / Candidate::forward / head op for
  // op (at::linear on a matrix is addmm with the transposed weight), so the
  // scripted model reproduces the search's logits bit for bit.
  std::ostringstream src;
  src << "def forward(self, x):\n"
      << "    x = torch.max_pool2d(torch.relu(torch.conv2d(x, self.stem_w, self.stem_b, [1, 1], [1, 1])), [2, 2])\n";
  for (int l = 0; l < static_cast<int>(subnet.size()); ++l) {
    const Candidate& c = net.candidate(l, subnet[l]);
    if (c.kernel == 0) continue;  // identity
    std::string p = "cell" + std::to_string(l) + "_";
    for (size_t i = 0; i < c.params.size(); ++i) param(p + (i % 2 ? "b" : "w") + std::to_string(i / 2), c.params[i]);
    int pad = c.kernel / 2;
    src << "    y = torch.relu(torch.conv2d(x, self." << p << "w0, self." << p << "b0, [1, 1], [" << pad << ", " << pad
        << "]))\n"
        << "    x = x + torch.conv2d(y, self." << p << "w1, self." << p << "b1)\n";
  }
  param("head_w", net.head_params().first);
  param("head_b", net.head_params().second);
  src << "    return torch.addmm(self.head_b, torch.flatten(x, 1), self.head_w.t())\n";
  m.define(src.str());
  m.eval();
  save_torchscript_module(m, out);
}

}  // namespace pw::rt::nas
