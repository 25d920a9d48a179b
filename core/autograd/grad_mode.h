/// @file
/// Grad mode: a thread-local switch that turns graph recording off (NoGradGuard, as
/// torch::NoGradGuard), used by optimisers, evaluation and in-place parameter updates.
#pragma once

namespace qgrad {

/// The thread-local grad mode: when off, ops record no autograd graph.
class GradMode {
 public:
  /// True when grad mode is on (the default) on this thread.
  static bool is_enabled();
  /// Turns grad mode on or off on this thread.
  static void set_enabled(bool enabled);
};

/// Turns grad mode off for its lifetime, then restores it (torch.no_grad).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Turns grad mode on for its lifetime, then restores it (torch.enable_grad).
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace qgrad
