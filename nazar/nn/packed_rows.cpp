// The RNN's packed row layout and its copies (packed_rows.h).
#include "nazar/nn/packed_rows.h"

#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"
#include "nazar/nn/absent.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace nazar::packed_rows {

void plan(RNNCache& c) {
    const int B = c.B, T = c.T;
    c.order.resize(static_cast<std::size_t>(B));
    std::iota(c.order.begin(), c.order.end(), 0);
    std::stable_sort(c.order.begin(), c.order.end(), [&](int a, int b) {
        return c.lengths[static_cast<std::size_t>(a)] > c.lengths[static_cast<std::size_t>(b)];
    });
    c.rows.assign(static_cast<std::size_t>(T), 0);
    c.offset.assign(static_cast<std::size_t>(T) + 1, 0);
    // the sorted lengths are nonincreasing: n_t = the number of them above t
    int n = B;
    for (int t = 0; t < T; ++t) {
        while (n > 0 && c.lengths[static_cast<std::size_t>(c.order[n - 1])] <= t) --n;
        c.rows[static_cast<std::size_t>(t)] = n;
        c.offset[static_cast<std::size_t>(t) + 1] = c.offset[static_cast<std::size_t>(t)] + n;
    }
}

namespace {

// f(t) for every step t; the steps' rows are disjoint in both layouts, so a copy of a whole
// batch (64 x 35 x 512 floats: half a millisecond on one core) runs over the pool.
template <class F>
void each_step(const RNNCache& c, int64_t floats, F&& f) {
    if (floats < kParallelCopyFloats) {
        for (int t = 0; t < c.T; ++t) f(t);
        return;
    }
    parallel_for(c.T, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) f(static_cast<int>(t));
    });
}

}  // namespace

void pack(ConstTensorView x, const RNNCache& c, TensorView dst) {
    const int T = c.T, C = x.dim(2);
    each_step(c, c.offset.back() * C, [&](int t) {
        const int n = c.rows[static_cast<std::size_t>(t)];
        float* d = dst.data() + c.offset[static_cast<std::size_t>(t)] * C;
        for (int i = 0; i < n; ++i, d += C)
            std::memcpy(d, x.data() + (int64_t{c.order[i]} * T + t) * C, sizeof(float) * C);
    });
}

void unpack(ConstTensorView src, const RNNCache& c, TensorView out, bool add) {
    const int B = c.B, T = c.T, C = out.dim(2);
    each_step(c, int64_t{B} * T * C, [&](int t) {
        const int n = c.rows[static_cast<std::size_t>(t)];
        const float* s = src.data() + c.offset[static_cast<std::size_t>(t)] * C;
        for (int i = 0; i < n; ++i, s += C) {
            float* o = out.data() + (int64_t{c.order[i]} * T + t) * C;
            if (add)
                kernels::axpy(C, 1.0f, s, o);
            else
                std::memcpy(o, s, sizeof(float) * C);
        }
        // copying: the rows past their sentence's length (t >= length) are 0
        if (!add)
            for (int i = n; i < B; ++i)
                std::fill_n(out.data() + (int64_t{c.order[i]} * T + t) * C, C, 0.0f);
    });
}

void mask_rows(ConstTensorView src, const RNNCache& c, ConstTensorView mask, TensorView dst,
               bool plus_zero) {
    if (absent(mask)) {
        dst.copy_from(src);
        return;
    }
    const int B = c.B, C = src.dim(1);
    each_step(c, c.offset.back() * C, [&](int t) {
        const int n = c.rows[static_cast<std::size_t>(t)];
        const int64_t o = c.offset[static_cast<std::size_t>(t)];
        for (int i = 0; i < n; ++i) {
            const float* s = src.data() + (o + i) * C;
            const float* m = mask.data() + (int64_t{t} * B + c.order[i]) * C;
            float* d = dst.data() + (o + i) * C;
            if (plus_zero)
                for (int j = 0; j < C; ++j) d[j] = 0.0f + s[j] * m[j];
            else
                for (int j = 0; j < C; ++j) d[j] = s[j] * m[j];
        }
    });
}

void gather_states(ConstTensorView state, std::span<const int> order, int i0, int i1,
                   TensorView dst) {
    const int H = dst.dim(1);
    for (int i = i0; i < i1; ++i) {
        float* d = dst.data() + int64_t{i - i0} * H;
        if (absent(state))
            std::fill_n(d, H, 0.0f);
        else
            std::memcpy(d, state.data() + int64_t{order[i]} * H, sizeof(float) * H);
    }
}

void add_states(ConstTensorView src, std::span<const int> order, TensorView state) {
    const int B = src.dim(0), H = src.dim(1);
    for (int i = 0; i < B; ++i) {
        kernels::axpy(H, 1.0f, src.data() + int64_t{i} * H, state.data() + int64_t{order[i]} * H);
    }
}

void set_states(ConstTensorView src, std::span<const int> order, TensorView state) {
    const int B = src.dim(0), H = src.dim(1);
    for (int i = 0; i < B; ++i)
        std::memcpy(state.data() + int64_t{order[i]} * H, src.data() + int64_t{i} * H,
                    sizeof(float) * H);
}

}  // namespace nazar::packed_rows
