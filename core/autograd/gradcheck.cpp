// Finite-difference gradient checking in float64.
#include "core/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"

namespace qgrad {

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, GradcheckOptions opts) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    QGRAD_CHECK(t.dtype() == kFloat64, DTypeError, "gradcheck: input ", i,
                " must be float64 for finite differences, got ", dtype_name(t.dtype()));
    QGRAD_CHECK(t.is_leaf() && t.is_contiguous() && t.device().is_cpu(), ValueError,
                "gradcheck: input ", i, " must be a contiguous CPU leaf tensor");
  }
  Tensor out0;
  {
    NoGradGuard ng;
    out0 = fn(inputs);
  }
  Generator gen(opts.seed);
  Tensor w = randn(out0.shape(), gen, TensorOptions().dtype(out0.dtype()));
  const std::vector<double> wv = w.to_vector<double>();
  // sum(fn(inputs) * w), on the host in double (core calls no ops).
  auto objective = [&]() {
    NoGradGuard ng;
    const std::vector<double> y = fn(inputs).to_vector<double>();
    double s = 0;
    for (std::size_t k = 0; k < y.size(); ++k) s += y[k] * wv[k];
    return s;
  };

  // Analytic.
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) t.set_grad(Tensor());
  // d/dx sum(y * w) is y's backward seeded with w.
  Tensor y = fn(inputs);
  GradcheckResult res;
  if (!y.requires_grad()) {
    res.ok = false;
    res.message = "gradcheck: the output does not require grad";
    return res;
  }
  y.backward(w);

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    Tensor analytic = t.grad();
    std::vector<double> an =
        analytic.defined() ? analytic.to_vector<double>() : std::vector<double>(t.numel(), 0.0);
    double* p = t.data_ptr<double>();
    for (std::int64_t k = 0; k < t.numel(); ++k) {
      const double orig = p[k];
      p[k] = orig + opts.eps;
      const double fp = objective();
      p[k] = orig - opts.eps;
      const double fm = objective();
      p[k] = orig;
      const double num = (fp - fm) / (2 * opts.eps);
      const double a = an[static_cast<std::size_t>(k)];
      if (!(std::fabs(a - num) <= opts.atol + opts.rtol * std::fabs(num))) {
        std::ostringstream os;
        os << "gradcheck: input " << i << " (shape " << shape_str(t.shape()) << "), element " << k
           << ": analytic " << a << " vs numeric " << num;
        res.ok = false;
        res.message = os.str();
        return res;
      }
    }
  }
  return res;
}

}  // namespace qgrad
