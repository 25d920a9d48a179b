/// @file
/// The process-wide "deterministic algorithms" setting, like torch.use_deterministic_algorithms:
/// when on, kernels that can choose between algorithms (cuDNN's convolutions) take only those
/// whose results are bitwise reproducible from run to run, at some cost in speed. Off by default.
/// One atomic flag, an explicit global setting that the trainer (or a user) flips once at start-up;
/// kernels read it on each call, so a change applies to the next call.
#pragma once

namespace qgrad {

/// Turns the deterministic-algorithms setting on or off (see the file comment).
void set_deterministic_algorithms(bool on);
/// True when the deterministic-algorithms setting is on.
bool deterministic_algorithms();

}  // namespace qgrad
