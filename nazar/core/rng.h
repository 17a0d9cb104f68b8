// Seeded, splittable random numbers: xoshiro256** seeded through SplitMix64.
//
// Rng(seed, stream) gives independent streams for the same seed (e.g. one per thread or per
// purpose: init, dropout, shuffling). split(k) derives a child without consuming parent state,
// so adding a new consumer never shifts existing streams. state()/set_state() serialise the
// generator exactly, for checkpoints that resume bit-identically.
#pragma once

#include "nazar/core/tensor.h"

#include <array>
#include <cmath>
#include <cstdint>

namespace nazar {

class Rng {
public:
    using State = std::array<uint64_t, 4>;

    explicit Rng(uint64_t seed = 0, uint64_t stream = 0) {
        uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ull + 0x9E3779B97F4A7C15ull);
        for (auto& w : s_) w = splitmix(x);
        seed_ = seed;
        stream_ = stream;
    }

    // Child generator for `stream`; deterministic in (this generator's seed/stream, k).
    Rng split(uint64_t k) const {
        return Rng(seed_ ^ (stream_ * 0x94D049BB133111EBull), (stream_ << 20) + k + 1);
    }

    uint64_t next_u64() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    float uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }  // [0, 1)
    double uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
    float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
    // [0, n) without modulo bias (Lemire).
    uint64_t below(uint64_t n) {
        NZ_CHECK(n > 0, "Rng::below(0)");
        unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * n;
        uint64_t l = static_cast<uint64_t>(m);
        if (l < n) {
            const uint64_t t = -n % n;
            while (l < t) {
                m = static_cast<unsigned __int128>(next_u64()) * n;
                l = static_cast<uint64_t>(m);
            }
        }
        return static_cast<uint64_t>(m >> 64);
    }
    float normal() {  // Box-Muller, one value per call (no hidden cached state)
        const double u1 = 1.0 - uniform_double(), u2 = uniform_double();
        return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                                  std::cos(6.283185307179586 * u2));
    }
    bool bernoulli(float p) { return uniform() < p; }

    void fill_uniform(TensorView t, float lo, float hi) {
        for (int64_t i = 0; i < t.numel(); ++i) t[i] = uniform(lo, hi);
    }
    void fill_normal(TensorView t, float mean, float stddev) {
        for (int64_t i = 0; i < t.numel(); ++i) t[i] = mean + stddev * normal();
    }

    State state() const { return s_; }
    void set_state(const State& s) { s_ = s; }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    static uint64_t splitmix(uint64_t& x) {
        uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    State s_{};
    uint64_t seed_ = 0, stream_ = 0;
};

}  // namespace nazar
