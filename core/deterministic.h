// The process-wide "deterministic algorithms" setting, like torch.use_deterministic_algorithms:
// when on, kernels that can choose between algorithms (cuDNN's convolutions) take only those
// whose results are bitwise reproducible from run to run, at some cost in speed. Off by default.
// One atomic flag, an explicit global setting that the trainer (or a user) flips once at start-up;
// kernels read it on each call, so a change applies to the next call.
#pragma once

namespace qgrad {

void set_deterministic_algorithms(bool on);
bool deterministic_algorithms();

}  // namespace qgrad
