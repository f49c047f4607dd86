"""Exit 0 when two run directories hold bitwise-equal stage weights.

usage: compare_weights.py RUN_A RUN_B STAGES
The stage files are libtorch archives (StageExecutor::save); Python's
torch.jit.load reads them, independently of the engine's own loader.
"""
import sys

import torch

a, b, stages = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = 0
for r in range(stages):
    pa = dict(torch.jit.load(f"{a}/weights/stage{r}.pt").named_parameters())
    pb = dict(torch.jit.load(f"{b}/weights/stage{r}.pt").named_parameters())
    if not pa or pa.keys() != pb.keys():
        sys.exit(f"stage {r}: parameter names differ: {sorted(pa)} vs {sorted(pb)}")
    for k in pa:
        if not torch.equal(pa[k], pb[k]):
            sys.exit(f"stage {r} {k}: max difference {(pa[k] - pb[k]).abs().max().item()}")
        n += 1
print(f"{n} tensors bitwise equal across {stages} stages")
