// In-place rebinding of module buffers and state-dict loading into lazily sized buffers.
#include "quant/modules/lazy_buffer.h"

#include <utility>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"

namespace qgrad::quant {

void rebind_buffer(const Tensor& dst, const Tensor& src) {
  QGRAD_CHECK(dst.defined() && src.defined(), ValueError,
              "rebind_buffer: both tensors must be defined");
  QGRAD_CHECK(!dst.requires_grad(), ValueError,
              "rebind_buffer: the destination requires grad (only buffers can be rebound)");
  if (dst.is_same(src)) return;
  Tensor copy;
  {
    NoGradGuard no_grad;
    copy = src.detach().contiguous().clone();
    if (copy.device() != dst.device()) copy = copy.to(dst.device());
  }
  TensorImpl* d = dst.impl();
  const TensorImpl* s = copy.impl();
  d->storage = s->storage;
  d->offset = s->offset;
  d->shape = s->shape;
  d->strides = s->strides;
  d->dtype = s->dtype;
}

void sync_buffer(const Tensor& registered, Tensor& state) {
  if (state.is_same(registered)) return;
  rebind_buffer(registered, state);
  state = registered;
}

namespace {
// Empty buffers rebound for a load, restored to their empty shape if the load throws.
std::vector<std::pair<Tensor, Tensor>> resize_for_load(nn::Module& model, const TensorDict& dict) {
  std::vector<std::pair<Tensor, Tensor>> resized;
  for (const auto& it : model.named_buffers()) {
    if (it.value.numel() != 0) continue;
    const Tensor* entry = dict.find(it.key);
    if (entry == nullptr || !entry->defined() || entry->shape() == it.value.shape()) continue;
    resized.emplace_back(it.value, it.value.detach().clone());
    rebind_buffer(it.value, zeros(entry->shape(), TensorOptions().dtype(entry->dtype())));
  }
  return resized;
}
}  // namespace

std::size_t resize_empty_buffers(nn::Module& model, const TensorDict& dict) {
  return resize_for_load(model, dict).size();
}

nn::LoadStateDictResult load_quant_state_dict(nn::Module& model, const TensorDict& dict,
                                              bool strict) {
  const auto resized = resize_for_load(model, dict);
  try {
    return model.load_state_dict(dict, strict);
  } catch (...) {
    for (const auto& [buffer, before] : resized) rebind_buffer(buffer, before);
    throw;
  }
}

}  // namespace qgrad::quant
