// Downstream consumer of an installed qgrad: computes a gradient and checks it.
#include <qgrad.h>

#include <cmath>
#include <iostream>

int main() {
  using namespace qgrad;
  Tensor x = tensor({1.0, 2.0, 3.0}, TensorOptions().requires_grad());
  Tensor y = sum(mul(x, x));
  y.backward();
  std::vector<float> g = x.grad().to_vector<float>();
  const bool ok = std::fabs(g[0] - 2.f) < 1e-6f && std::fabs(g[1] - 4.f) < 1e-6f &&
                  std::fabs(g[2] - 6.f) < 1e-6f;
  std::cout << "downstream: grad " << x.grad() << (ok ? " ok" : " WRONG") << "\n";
  return ok ? 0 : 1;
}
