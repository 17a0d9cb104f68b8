// Dense float32 tensors, row-major, last dimension contiguous.
//
//   Shape       up to 4 dimensions, stored inline (no heap).
//   TensorView  non-owning (pointer + shape); cheap to copy and pass by value. Views are always
//               contiguous; sub-blocks with a leading dimension go through gemm_raw (blas.h).
//   ConstTensorView  the read-only view: what a const Tensor gives and what inputs take.
//   Tensor      owning, 64-byte aligned. Copy = deep copy. resize() reuses its buffer when it
//               is large enough, so tensors held across steps stop allocating after warm-up.
//               A moved-from Tensor is empty (shape (0,), no buffer, capacity 0) and usable.
//   Arena       bump allocator for per-step scratch: alloc() is a pointer bump, reset() keeps
//               the memory. Nothing inside the time loop calls malloc.
// Shape letters (docs/shapes.md): B batch, S source length, T target length, E embedding,
// H RNN hidden, C encoder output, A attention, V vocabulary, K beam, D local half-window.
#pragma once

#include "nazar/core/check.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace nazar {

inline constexpr int kMaxDims = 4;
inline constexpr std::size_t kAlignment = 64;

class Shape {
public:
    Shape() = default;
    Shape(std::initializer_list<int64_t> dims);
    explicit Shape(std::span<const int64_t> dims);

    int ndim() const { return n_; }
    int64_t operator[](int i) const { return d_[i < 0 ? i + n_ : i]; }
    int64_t& operator[](int i) { return d_[i < 0 ? i + n_ : i]; }
    int64_t numel() const;
    std::span<const int64_t> dims() const { return {d_, static_cast<std::size_t>(n_)}; }
    bool operator==(const Shape& o) const;
    std::string str() const;  // "(4, 7, 512)"

private:
    int64_t d_[kMaxDims] = {0, 0, 0, 0};
    int n_ = 0;
};

// A non-owning view of contiguous floats. TensorView may write; ConstTensorView may only read.
// A TensorView (or a Tensor) converts to a ConstTensorView implicitly, never the reverse, and a
// const Tensor gives only ConstTensorViews: a function that takes ConstTensorView or
// const Tensor& does not write through it. Copying a view does not copy the data, so a
// `const TensorView` still writes (like `float* const`): read-only is spelled ConstTensorView.
template <class T>
class BasicTensorView {
public:
    BasicTensorView() = default;
    BasicTensorView(T* data, Shape shape) : data_(data), shape_(shape) {}
    template <class U>
    requires(std::is_same_v<T, const U> && !std::is_const_v<U>)
        BasicTensorView(BasicTensorView<U> v)  // NOLINT: writable -> read-only is always safe
        : data_(v.data()), shape_(v.shape()) {}

    T* data() const { return data_; }
    const Shape& shape() const { return shape_; }
    int ndim() const { return shape_.ndim(); }
    int dim(int i) const { return static_cast<int>(shape_[i]); }
    int64_t numel() const { return shape_.numel(); }
    bool empty() const { return numel() == 0; }
    std::span<T> span() const { return {data_, static_cast<std::size_t>(numel())}; }

    T& operator[](int64_t i) const { return data_[i]; }  // flat index
    T& at(int64_t i) const;
    T& at(int64_t i, int64_t j) const;
    T& at(int64_t i, int64_t j, int64_t k) const;
    T& at(int64_t i, int64_t j, int64_t k, int64_t l) const;

    BasicTensorView slice(int64_t begin, int64_t end) const;  // rows [begin, end) of dim 0
    BasicTensorView select(int64_t i) const;                  // sub-tensor i of dim 0 (drops it)
    BasicTensorView reshape(Shape shape) const;               // same numel, same data
    BasicTensorView as_matrix() const;  // (numel / last, last): leading dims collapsed

    void zero() const requires(!std::is_const_v<T>);
    void fill(float value) const requires(!std::is_const_v<T>);
    void copy_from(BasicTensorView<const float> src) const  // shapes must have the same numel
        requires(!std::is_const_v<T>);

private:
    T* data_ = nullptr;
    Shape shape_{0};  // default: empty (numel 0), not a scalar
};

using TensorView = BasicTensorView<float>;
using ConstTensorView = BasicTensorView<const float>;
extern template class BasicTensorView<float>;
#if !defined(__clang__)  // clang 14: the read-only view's members are instantiated one by one
extern template class BasicTensorView<const float>;  // (tensor.cpp), its inline ones implicitly
#endif

// Constness is deep: a const Tensor gives const floats and ConstTensorViews only.
class Tensor {
public:
    Tensor() = default;
    explicit Tensor(Shape shape);  // zero-initialised
    static Tensor zeros(Shape shape) { return Tensor(shape); }
    static Tensor from(Shape shape, std::span<const float> values);
    static Tensor like(ConstTensorView v) { return Tensor(v.shape()); }
    static Tensor clone(ConstTensorView v);
    // Address space for `shape` with no memory behind it (an inaccessible mapping): the
    // placeholder of a parameter an inference model holds only in packed form or has not yet
    // loaded (models/model_file.h). Any read or write through it faults; resize() gives it
    // real memory. reserved() says whether a tensor is one.
    static Tensor reserved(Shape shape);
    bool reserved() const { return data_.get_deleter().mapped != 0; }

    Tensor(const Tensor& o);
    Tensor& operator=(const Tensor& o);
    // Moving takes the buffer, its capacity and the shape, and leaves `o` empty (shape (0,),
    // capacity 0), like a default-constructed Tensor: a later resize() allocates afresh.
    Tensor(Tensor&& o) noexcept;
    Tensor& operator=(Tensor&& o) noexcept;
    void swap(Tensor& o) noexcept;
    friend void swap(Tensor& a, Tensor& b) noexcept { a.swap(b); }

    // Changes the shape; keeps the buffer when it has room (contents then unspecified
    // unless `zero` is set).
    void resize(Shape shape, bool zero = true);
    // Gives the whole pages inside the buffer back to the system (madvise MADV_DONTNEED) when
    // the buffer spans at least min_bytes; keeps the buffer, its capacity and shape. For
    // scratch whose values are dead until they are next written: they read as zero until then,
    // and each page given back costs a fault when it is touched again.
    void discard_pages(int64_t min_bytes);

    TensorView view() { return {data_.get(), shape_}; }
    ConstTensorView view() const { return {data_.get(), shape_}; }
    operator TensorView() { return view(); }             // NOLINT: views are the currency
    operator ConstTensorView() const { return view(); }  // NOLINT

    float* data() { return data_.get(); }
    const float* data() const { return data_.get(); }
    const Shape& shape() const { return shape_; }
    int ndim() const { return shape_.ndim(); }
    int dim(int i) const { return static_cast<int>(shape_[i]); }
    int64_t numel() const { return shape_.numel(); }
    int64_t capacity() const { return capacity_; }  // floats the buffer holds (>= numel())
    bool empty() const { return numel() == 0; }
    std::span<float> span() { return view().span(); }
    std::span<const float> span() const { return view().span(); }
    float& operator[](int64_t i) { return data_.get()[i]; }
    const float& operator[](int64_t i) const { return data_.get()[i]; }
    template <class... I>
    float& at(I... i) {
        return view().at(static_cast<int64_t>(i)...);
    }
    template <class... I>
    const float& at(I... i) const {
        return view().at(static_cast<int64_t>(i)...);
    }
    TensorView slice(int64_t b, int64_t e) { return view().slice(b, e); }
    ConstTensorView slice(int64_t b, int64_t e) const { return view().slice(b, e); }
    TensorView select(int64_t i) { return view().select(i); }
    ConstTensorView select(int64_t i) const { return view().select(i); }
    TensorView reshape(Shape s) { return view().reshape(s); }
    ConstTensorView reshape(Shape s) const { return view().reshape(s); }
    TensorView as_matrix() { return view().as_matrix(); }
    ConstTensorView as_matrix() const { return view().as_matrix(); }
    void zero() { view().zero(); }
    void fill(float v) { view().fill(v); }
    void copy_from(ConstTensorView src) { view().copy_from(src); }

private:
    struct Free {
        std::size_t mapped;  // bytes of a reserved() mapping; 0 (value-initialised): aligned_alloc
        void operator()(float* p) const;
    };
    std::unique_ptr<float[], Free> data_;
    int64_t capacity_ = 0;
    Shape shape_{0};  // default: empty (numel 0), not a scalar
};

// Per-step scratch memory. alloc() never moves earlier allocations; reset() frees nothing but
// merges the chunks into one, so a steady-state step is a single pointer bump per tensor.
class Arena {
public:
    explicit Arena(std::size_t initial_bytes = 1 << 20);
    ~Arena();
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;

    TensorView alloc(Shape shape);  // contents unspecified
    TensorView zeros(Shape shape);  // zero-filled
    void reset();
    std::size_t used() const { return used_; }
    std::size_t capacity() const;

private:
    struct Chunk {
        float* data;
        std::size_t bytes;
    };
    std::vector<Chunk> chunks_;
    std::size_t offset_ = 0;  // into chunks_.back()
    std::size_t used_ = 0;    // bytes handed out since reset
    std::size_t peak_ = 0;
};

// 64-byte aligned, zeroed; throws on failure. Large blocks are recycled (block_cache.h).
float* aligned_alloc_floats(int64_t n);
void aligned_free(float* p);  // only what aligned_alloc_floats returned
// aligned_free, but a large block goes back to the system instead of into the block cache: for
// a block its owner has outgrown (Tensor::resize), whose size nothing is likely to ask for again.
void aligned_free_outgrown(float* p);

// Max |a - b| / max(max |b|, tiny): the norm-wise relative error used by parity tests.
double max_rel_error(ConstTensorView a, ConstTensorView b);
double max_abs_diff(ConstTensorView a, ConstTensorView b);

namespace detail {
[[noreturn]] void shape_mismatch(const char* file, int line, const char* name, const Shape& want,
                                 const Shape& got);
}

}  // namespace nazar

// NZ_CHECK_SHAPE(enc_out, {B, S, C}) -> "luong.cpp:88 enc_out: expected (4, 7, 512), got (4, 7,
// 256)"
#define NZ_CHECK_SHAPE(view, ...)                                                                 \
    do {                                                                                          \
        const ::nazar::Shape nz_want_ = ::nazar::Shape __VA_ARGS__;                               \
        if (!((view).shape() == nz_want_)) [[unlikely]]                                           \
            ::nazar::detail::shape_mismatch(__FILE__, __LINE__, #view, nz_want_, (view).shape()); \
    } while (0)
