// Data-parallel helpers (data_parallel.h).
#include "nazar/dist/data_parallel.h"

#include "nazar/core/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace nazar::dist {

RowRange shard_rows(int rows, int parts, int part) {
    NZ_CHECK(parts >= 1 && part >= 0 && part < parts && rows >= 0,
             "shard_rows: part {} of {} over {} rows", part, parts, rows);
    const int base = rows / parts, extra = rows % parts;
    const int begin = part * base + std::min(part, extra);
    return {begin, begin + base + (part < extra ? 1 : 0)};
}

Batch batch_rows(const Batch& b, RowRange r) {
    NZ_CHECK(r.begin >= 0 && r.begin <= r.end && r.end <= b.B, "batch_rows: rows [{}, {}) of {}",
             r.begin, r.end, b.B);
    Batch out;
    out.B = r.size();
    for (int i = r.begin; i < r.end; ++i) {
        out.S = std::max(out.S, b.src_lengths[i]);
        out.T = std::max(out.T, b.tgt_lengths[i]);
    }
    out.src.resize(static_cast<std::size_t>(out.B) * out.S);
    out.tgt_in.resize(static_cast<std::size_t>(out.B) * out.T);
    out.tgt_out.resize(static_cast<std::size_t>(out.B) * out.T);
    for (int i = 0; i < out.B; ++i) {
        const std::size_t src_row = static_cast<std::size_t>(r.begin + i) * b.S;
        const std::size_t tgt_row = static_cast<std::size_t>(r.begin + i) * b.T;
        std::copy_n(b.src.begin() + static_cast<std::ptrdiff_t>(src_row), out.S,
                    out.src.begin() + static_cast<std::ptrdiff_t>(i) * out.S);
        std::copy_n(b.tgt_in.begin() + static_cast<std::ptrdiff_t>(tgt_row), out.T,
                    out.tgt_in.begin() + static_cast<std::ptrdiff_t>(i) * out.T);
        std::copy_n(b.tgt_out.begin() + static_cast<std::ptrdiff_t>(tgt_row), out.T,
                    out.tgt_out.begin() + static_cast<std::ptrdiff_t>(i) * out.T);
    }
    out.src_lengths.assign(b.src_lengths.begin() + r.begin, b.src_lengths.begin() + r.end);
    out.tgt_lengths.assign(b.tgt_lengths.begin() + r.begin, b.tgt_lengths.begin() + r.end);
    out.index.assign(b.index.begin() + r.begin, b.index.begin() + r.end);
    return out;
}

void GradientSum::operator()(const ParamList& params) {
    if (!comm_.parallel()) return;
    const auto w0 = std::chrono::steady_clock::now();
    comm_.barrier("gradient all-reduce (waiting for every rank's backward)");
    const auto t0 = std::chrono::steady_clock::now();
    wait_s_ += std::chrono::duration<double>(t0 - w0).count();
    bucket_.resize(bucket_floats_);
    // (tensor, offset, count) pieces of the current bucket, in order.
    struct Piece {
        float* data;
        std::size_t n;
    };
    std::vector<Piece> pieces;
    std::size_t filled = 0;
    auto flush = [&] {
        if (filled == 0) return;
        std::size_t at = 0;
        for (const Piece& p : pieces) std::memcpy(bucket_.data() + at, p.data, p.n * 4), at += p.n;
        comm_.all_reduce_sum(std::span<float>(bucket_.data(), filled), "gradient all-reduce");
        at = 0;
        for (const Piece& p : pieces) std::memcpy(p.data, bucket_.data() + at, p.n * 4), at += p.n;
        ++calls_;
        bytes_ += static_cast<int64_t>(filled) * 4;
        pieces.clear();
        filled = 0;
    };
    for (const auto& p : params) {
        float* g = p.grad->data();
        std::size_t left = static_cast<std::size_t>(p.grad->numel());
        if (left >= bucket_floats_ / 2) {  // large: reduced where it lies, without copies
            for (std::size_t i = 0; i < left; i += bucket_floats_) {
                const std::size_t n = std::min(bucket_floats_, left - i);
                comm_.all_reduce_sum(std::span<float>(g + i, n), "gradient all-reduce");
                ++calls_;
                bytes_ += static_cast<int64_t>(n) * 4;
            }
            continue;
        }
        while (left > 0) {
            const std::size_t n = std::min(left, bucket_floats_ - filled);
            pieces.push_back({g, n});
            g += n, left -= n, filled += n;
            if (filled == bucket_floats_) flush();
        }
    }
    flush();
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t weights_hash(const ParamList& params) {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](uint64_t w) {
        h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0x100000001b3ull;
    };
    for (const auto& p : params) {
        for (char c : p.name) mix(static_cast<unsigned char>(c));
        const float* x = p.value->data();
        const int64_t n = p.value->numel();
        mix(static_cast<uint64_t>(n));
        // Four independent lanes over 32-bit words (fast), folded at the end of the tensor.
        uint64_t lane[4] = {1, 2, 3, 4};
        int64_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (int k = 0; k < 4; ++k) {
                uint32_t w;
                std::memcpy(&w, x + i + k, 4);
                lane[k] = (lane[k] ^ w) * 0x100000001b3ull;
            }
        for (; i < n; ++i) {
            uint32_t w;
            std::memcpy(&w, x + i, 4);
            lane[0] = (lane[0] ^ w) * 0x100000001b3ull;
        }
        for (uint64_t l : lane) mix(l);
    }
    return h;
}

void broadcast_weights(Communicator& comm, const ParamList& params) {
    if (!comm.parallel()) return;
    for (const auto& p : params)
        comm.broadcast(
            std::span<float>(p.value->data(), static_cast<std::size_t>(p.value->numel())),
            "weight broadcast");
}

void check_weights_agree(Communicator& comm, const ParamList& params, const std::string& when) {
    if (!comm.parallel()) return;
    const std::vector<uint64_t> h = comm.all_gather(weights_hash(params), "weight-hash check");
    std::string differ;
    for (std::size_t r = 1; r < h.size(); ++r)
        if (h[r] != h[0]) differ += fmt::format("{}{}", differ.empty() ? "" : ", ", r);
    if (!differ.empty())
        throw Error(fmt::format(
            "data-parallel weights drifted {}: rank(s) {} hold weights different from rank 0's "
            "(hash {:016x}); the ranks no longer train one model (a non-deterministic reduction "
            "or a bug): stopping",
            when, differ, h[0]));
}

}  // namespace nazar::dist
