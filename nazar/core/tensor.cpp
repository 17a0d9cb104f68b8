#include "nazar/core/tensor.h"

#include "nazar/core/threads.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include <sys/mman.h>
#include <unistd.h>

namespace nazar {

// ---- Shape -------------------------------------------------------------------------------

Shape::Shape(std::initializer_list<int64_t> dims)
    : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
    NZ_CHECK(dims.size() <= static_cast<std::size_t>(kMaxDims),
             "tensors have at most {} dimensions, got {}", kMaxDims, dims.size());
    n_ = static_cast<int>(dims.size());
    for (int i = 0; i < n_; ++i) {
        NZ_CHECK(dims[i] >= 0, "negative dimension {} in shape", dims[i]);
        d_[i] = dims[i];
    }
}

int64_t Shape::numel() const {
    int64_t n = 1;
    for (int i = 0; i < n_; ++i) n *= d_[i];
    return n;
}

bool Shape::operator==(const Shape& o) const {
    if (n_ != o.n_) return false;
    for (int i = 0; i < n_; ++i)
        if (d_[i] != o.d_[i]) return false;
    return true;
}

std::string Shape::str() const {
    std::string s = "(";
    for (int i = 0; i < n_; ++i) s += (i ? ", " : "") + std::to_string(d_[i]);
    return s + (n_ == 1 ? ",)" : ")");
}

namespace detail {
void shape_mismatch(const char* file, int line, const char* name, const Shape& want,
                    const Shape& got) {
    throw_error(file, line, fmt::format("{}: expected {}, got {}", name, want.str(), got.str()));
}
}  // namespace detail

// ---- TensorView --------------------------------------------------------------------------

template <class T>
T& BasicTensorView<T>::at(int64_t i) const {
    NZ_DCHECK(ndim() == 1 && i >= 0 && i < shape_[0]);
    return data_[i];
}
template <class T>
T& BasicTensorView<T>::at(int64_t i, int64_t j) const {
    NZ_DCHECK(ndim() == 2 && i >= 0 && i < shape_[0] && j >= 0 && j < shape_[1]);
    return data_[i * shape_[1] + j];
}
template <class T>
T& BasicTensorView<T>::at(int64_t i, int64_t j, int64_t k) const {
    NZ_DCHECK(ndim() == 3 && i >= 0 && i < shape_[0] && j >= 0 && j < shape_[1] && k >= 0 &&
              k < shape_[2]);
    return data_[(i * shape_[1] + j) * shape_[2] + k];
}
template <class T>
T& BasicTensorView<T>::at(int64_t i, int64_t j, int64_t k, int64_t l) const {
    NZ_DCHECK(ndim() == 4 && i >= 0 && i < shape_[0] && j >= 0 && j < shape_[1] && k >= 0 &&
              k < shape_[2] && l >= 0 && l < shape_[3]);
    return data_[((i * shape_[1] + j) * shape_[2] + k) * shape_[3] + l];
}

template <class T>
BasicTensorView<T> BasicTensorView<T>::slice(int64_t begin, int64_t end) const {
    NZ_CHECK(ndim() >= 1 && 0 <= begin && begin <= end && end <= shape_[0],
             "slice [{}, {}) out of range for shape {}", begin, end, shape_.str());
    Shape s = shape_;
    s[0] = end - begin;
    const int64_t row = shape_[0] ? numel() / shape_[0] : 0;
    return {data_ + begin * row, s};
}

template <class T>
BasicTensorView<T> BasicTensorView<T>::select(int64_t i) const {
    NZ_CHECK(ndim() >= 1 && 0 <= i && i < shape_[0], "select {} out of range for shape {}", i,
             shape_.str());
    auto d = shape_.dims();
    Shape s(d.subspan(1));
    return {data_ + i * s.numel(), s};
}

template <class T>
BasicTensorView<T> BasicTensorView<T>::reshape(Shape shape) const {
    NZ_CHECK(shape.numel() == numel(), "cannot reshape {} to {}", shape_.str(), shape.str());
    return {data_, shape};
}

template <class T>
BasicTensorView<T> BasicTensorView<T>::as_matrix() const {
    NZ_CHECK(ndim() >= 1, "as_matrix of a scalar");
    const int64_t last = shape_[-1];
    return {data_, Shape{last ? numel() / last : 0, last}};
}

template <class T>
void BasicTensorView<T>::zero() const requires(!std::is_const_v<T>) {
    const int64_t n = numel();
    // Megabytes (a gradient, a batch's d_keys) over the pool: one core writes about 25 GB/s on
    // the VMs measured, and training zeroes 60 MB a step (docs/performance.md, "Serial
    // stretches between a step's products"). From 1 MiB, four times the copies' threshold
    // (threads.h): every zeroing resize comes through here, most of them a step's small buffers,
    // which the caller clears faster than it could hand half to the pool.
    constexpr int64_t kPiece = kParallelCopyFloats;
    if (n >= 4 * kPiece) {
        parallel_for((n + kPiece - 1) / kPiece, 1, [&](int64_t u0, int64_t u1) {
            const int64_t b = u0 * kPiece, e = std::min(n, u1 * kPiece);
            std::memset(data_ + b, 0, static_cast<std::size_t>(e - b) * sizeof(float));
        });
    } else if (n > 0) {
        std::memset(data_, 0, static_cast<std::size_t>(n) * sizeof(float));
    }
}
template <class T>
void BasicTensorView<T>::fill(float value) const requires(!std::is_const_v<T>) {
    std::fill_n(data_, numel(), value);
}
template <class T>
void BasicTensorView<T>::copy_from(BasicTensorView<const float> src) const
    requires(!std::is_const_v<T>) {
    NZ_CHECK(src.numel() == numel(), "copy_from: {} into {}", src.shape().str(), shape_.str());
    if (numel() && src.data() != data_)
        std::memmove(data_, src.data(), static_cast<std::size_t>(numel()) * sizeof(float));
}

template class BasicTensorView<float>;
#if defined(__clang__)
// clang 14 applies `template class` to the writing members too (their requires-clauses
// notwithstanding) and fails to compile them: the read-only view's out-of-line members one by one.
using CView = BasicTensorView<const float>;
template const float& CView::at(int64_t) const;
template const float& CView::at(int64_t, int64_t) const;
template const float& CView::at(int64_t, int64_t, int64_t) const;
template const float& CView::at(int64_t, int64_t, int64_t, int64_t) const;
template CView CView::slice(int64_t, int64_t) const;
template CView CView::select(int64_t) const;
template CView CView::reshape(Shape) const;
template CView CView::as_matrix() const;
#else
template class BasicTensorView<const float>;
#endif

// ---- Tensor ------------------------------------------------------------------------------

void Tensor::Free::operator()(float* p) const {
    if (mapped)
        munmap(p, mapped);
    else
        aligned_free(p);
}

Tensor Tensor::reserved(Shape shape) {
    Tensor t;
    t.shape_ = shape;
    if (shape.numel() == 0) return t;
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t bytes =
        (static_cast<std::size_t>(shape.numel()) * sizeof(float) + page - 1) / page * page;
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    NZ_CHECK(p != MAP_FAILED, "Tensor::reserved: cannot reserve {} bytes of address space", bytes);
    t.data_ = std::unique_ptr<float[], Free>(static_cast<float*>(p), Free{bytes});
    return t;  // capacity_ 0: resize() allocates real memory
}

Tensor::Tensor(Shape shape)
    : data_(aligned_alloc_floats(shape.numel())), capacity_(shape.numel()), shape_(shape) {}

Tensor Tensor::from(Shape shape, std::span<const float> values) {
    NZ_CHECK(static_cast<int64_t>(values.size()) == shape.numel(),
             "Tensor::from: {} values for shape {}", values.size(), shape.str());
    Tensor t(shape);
    std::copy(values.begin(), values.end(), t.data());
    return t;
}

Tensor Tensor::clone(ConstTensorView v) {
    Tensor t(v.shape());
    t.copy_from(v);
    return t;
}

Tensor::Tensor(const Tensor& o) : Tensor(o.shape_) {
    copy_from(o.view());
}

Tensor::Tensor(Tensor&& o) noexcept
    : data_(std::move(o.data_)),
      capacity_(std::exchange(o.capacity_, 0)),
      shape_(std::exchange(o.shape_, Shape{0})) {}

Tensor& Tensor::operator=(Tensor&& o) noexcept {
    if (this != &o) {
        data_ = std::move(o.data_);
        capacity_ = std::exchange(o.capacity_, 0);
        shape_ = std::exchange(o.shape_, Shape{0});
    }
    return *this;
}

void Tensor::swap(Tensor& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(capacity_, o.capacity_);
    std::swap(shape_, o.shape_);
}

Tensor& Tensor::operator=(const Tensor& o) {
    if (this != &o) {
        resize(o.shape_, false);
        copy_from(o.view());
    }
    return *this;
}

void Tensor::resize(Shape shape, bool zero) {
    if (shape.numel() > capacity_) {
        // Outgrown: the smaller block goes back to the system first, not into the block cache,
        // where a buffer that grows (a decoding session's, batch after batch) would leave one
        // block of every size it had (per decoding thread).
        if (data_ && !data_.get_deleter().mapped) aligned_free_outgrown(data_.release());
        data_ = std::unique_ptr<float[], Free>(aligned_alloc_floats(shape.numel()));  // Free{0}
        capacity_ = shape.numel();
        shape_ = shape;
        return;  // fresh memory is already zero
    }
    shape_ = shape;
    if (zero) view().zero();
}

void Tensor::discard_pages(int64_t min_bytes) {
    const auto bytes = static_cast<uintptr_t>(capacity_) * sizeof(float);
    if (!data_ || data_.get_deleter().mapped || bytes < static_cast<uintptr_t>(min_bytes)) return;
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(data_.get());
    // Pages wholly inside the buffer only: the allocator's own words lie outside it.
    const uintptr_t first = (begin + page - 1) / page * page, last = (begin + bytes) / page * page;
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

// ---- Arena -------------------------------------------------------------------------------

Arena::Arena(std::size_t initial_bytes) {
    const std::size_t n = std::max<std::size_t>(initial_bytes / sizeof(float), 1024);
    chunks_.push_back({aligned_alloc_floats(static_cast<int64_t>(n)), n * sizeof(float)});
}

Arena::~Arena() {
    for (auto& c : chunks_) aligned_free(c.data);
}

TensorView Arena::alloc(Shape shape) {
    const std::size_t bytes =
        (static_cast<std::size_t>(shape.numel()) * sizeof(float) + kAlignment - 1) / kAlignment *
        kAlignment;
    Chunk* c = &chunks_.back();
    if (offset_ + bytes > c->bytes) {
        const std::size_t size = std::max(bytes, c->bytes * 2);
        chunks_.push_back({aligned_alloc_floats(static_cast<int64_t>(size / sizeof(float))), size});
        c = &chunks_.back();
        offset_ = 0;
    }
    float* p = reinterpret_cast<float*>(reinterpret_cast<char*>(c->data) + offset_);
    offset_ += bytes;
    used_ += bytes;
    peak_ = std::max(peak_, used_);
    return {p, shape};
}

TensorView Arena::zeros(Shape shape) {
    TensorView v = alloc(shape);
    v.zero();
    return v;
}

void Arena::reset() {
    if (chunks_.size() > 1) {  // merge: next round fits in one chunk
        const std::size_t size = std::max(peak_, capacity());
        for (auto& c : chunks_) aligned_free(c.data);
        chunks_.clear();
        chunks_.push_back({aligned_alloc_floats(static_cast<int64_t>(size / sizeof(float))), size});
    }
    offset_ = 0;
    used_ = 0;
}

std::size_t Arena::capacity() const {
    std::size_t n = 0;
    for (auto& c : chunks_) n += c.bytes;
    return n;
}

// ---- comparisons -------------------------------------------------------------------------

double max_abs_diff(ConstTensorView a, ConstTensorView b) {
    NZ_CHECK(a.numel() == b.numel(), "max_abs_diff: {} vs {}", a.shape().str(), b.shape().str());
    double m = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
        const double d = std::abs(static_cast<double>(a[i]) - b[i]);
        if (!(d <= m)) m = d;  // NaN propagates as NaN
    }
    return m;
}

double max_rel_error(ConstTensorView a, ConstTensorView b) {
    double scale = 0;
    for (int64_t i = 0; i < b.numel(); ++i)
        scale = std::max(scale, std::abs(static_cast<double>(b[i])));
    return max_abs_diff(a, b) / std::max(scale, 1e-30);
}

}  // namespace nazar
