// A first look at qgrad: tensors, broadcasting ops and reverse-mode autograd, fitting a line.
#include <iostream>

#include "qgrad.h"

int main() {
  using namespace qgrad;
  Generator gen(0);
  Tensor x = randn({64, 1}, gen);
  Tensor y = add(mul(x, 3.0), 0.5);  // ground truth: y = 3x + 0.5
  Tensor w = zeros({1}, TensorOptions().requires_grad());
  Tensor b = zeros({1}, TensorOptions().requires_grad());
  for (int step = 0; step < 100; ++step) {
    Tensor err = sub(add(mul(x, w), b), y);
    Tensor loss = mean(mul(err, err));
    loss.backward();
    NoGradGuard no_grad;
    w.copy_(sub(w, mul(w.grad(), 0.1)));
    b.copy_(sub(b, mul(b.grad(), 0.1)));
    w.set_grad(Tensor());
    b.set_grad(Tensor());
    if (step % 20 == 0 || step == 99)
      std::cout << "step " << step << " loss " << loss.item() << "\n";
  }
  std::cout << "w = " << w << "\nb = " << b << "\n";
  return 0;
}
