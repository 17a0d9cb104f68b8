// Exponential moving average of the weights (ema.h).
#include "nazar/train/ema.h"

#include "nazar/core/check.h"

#include <algorithm>
#include <utility>

namespace nazar {

Ema::Ema(const ParamList& params, double decay) : params_(params), decay_(decay) {
    NZ_CHECK_USAGE(decay > 0 && decay < 1, "Ema: decay must be in (0, 1), got {}", decay);
    shadow_.reserve(params.size());
    for (const auto& p : params) {
        shadow_.emplace_back(p.value->shape());
        shadow_.back().copy_from(*p.value);
    }
}

double Ema::decay_at(double decay, int64_t n) {
    return std::min(decay, (1.0 + static_cast<double>(n)) / (10.0 + static_cast<double>(n)));
}

void Ema::update(int64_t n) {
    NZ_CHECK(!swapped_, "Ema::update while the average is swapped into the model");
    const double d = decay_at(decay_, n);
    const float a = static_cast<float>(d), b = static_cast<float>(1.0 - d);
    for (std::size_t i = 0; i < params_.size(); ++i) {
        const float* w = params_[i].value->data();
        float* e = shadow_[i].data();
        const int64_t m = shadow_[i].numel();
        for (int64_t j = 0; j < m; ++j) e[j] = a * e[j] + b * w[j];
    }
}

void Ema::swap() {
    for (std::size_t i = 0; i < params_.size(); ++i) {
        float* w = params_[i].value->data();
        std::swap_ranges(w, w + params_[i].value->numel(), shadow_[i].data());
    }
    swapped_ = !swapped_;
}

void Ema::save_raw(SafeTensors& st) const {
    NZ_CHECK(swapped_, "Ema::save_raw: the average is not swapped into the model");
    for (std::size_t i = 0; i < params_.size(); ++i)
        st.set(kRawWeightPrefix + params_[i].name, shadow_[i]);
}

void Ema::load_raw(const SafeTensors& st, const std::string& source) {
    NZ_CHECK(!swapped_, "Ema::load_raw while swapped");
    for (std::size_t i = 0; i < params_.size(); ++i) {
        const std::string name = kRawWeightPrefix + params_[i].name;
        NZ_CHECK_INPUT(st.contains(name),
                       "'{}': checkpoint lacks tensor '{}' (the raw weights of an ema_decay run)",
                       source, name);
        shadow_[i].copy_from(*params_[i].value);  // the file's model part: the average
        params_[i].value->copy_from(st.get(name, params_[i].value->shape()));
    }
}

}  // namespace nazar
