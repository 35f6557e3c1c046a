// Causal softmax attention for XLA's CPU backend, forward and backward, as XLA FFI handlers
// (used by ropebook.attention; compiled on first use, see that module).
//
// q, k, v are [..., T, H, D] float32 (the layout the model's projections produce; leading dims
// are batch), D a multiple of the vector width W; the scale is 1/sqrt(D). Each (batch, head) is
// done in tiles that stay in L1: keys transposed to [D, T] so the key index j runs along W-float
// vectors, query rows in blocks of R. Only the keys a block can see are computed, forward and
// backward (rounded out to whole vectors): j <= i, and with local attention j >= first_key(i), a
// sliding window of the last `window` keys (Gemma, Cohere2) or the query's own chunk of `chunk`
// keys (Llama 4); tiles wholly outside are skipped. The backward pass recomputes the
// probabilities from the saved log-sum-exp, as FlashAttention does, so no [T, T] array ever
// reaches memory; dK and dV accumulate as rows [T, D], the block's query and output-gradient
// rows held in registers. Vectors use the GCC/Clang vector extension, so the same source
// compiles to AVX-512, AVX2 or NEON.
//
// W is one register of the instruction set compiled for: 16 floats under AVX-512, else 8 (AVX2,
// or two NEON registers). A 16-float vector on AVX2 is two registers, so the R accumulators of
// a tile no longer fit in AVX2's 16 and spill to memory: that made the kernel slower than XLA's
// attention there. -DROPEBOOK_LANES=N overrides the choice (benchmarks compare the two).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

#if defined(ROPEBOOK_LANES)
constexpr int64_t W = ROPEBOOK_LANES;
#elif defined(__AVX512F__)
constexpr int64_t W = 16;
#else
constexpr int64_t W = 8;
#endif  // floats per vector
constexpr int64_t R = 8;  // query rows per block
static_assert(W % R == 0, "a query block must not run past the padded sequence");
typedef float vf __attribute__((vector_size(W * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(W * sizeof(int32_t))));
typedef float vf_unaligned __attribute__((vector_size(W * sizeof(float)), aligned(4)));

inline vf load(const float* p) { return *reinterpret_cast<const vf_unaligned*>(p); }
inline void store(float* p, vf x) { *reinterpret_cast<vf_unaligned*>(p) = x; }
inline vf splat(float x) { return vf{} + x; }
inline vi splat_int(int64_t x) { return vi{} + static_cast<int32_t>(x); }

// Lanes of the keys j..j+W-1 that lie in first..n-1 (all ones), the rest zero. Masked keys are
// set lane by lane, not by scalar stores: a vector load of a row just written by scalar stores
// waits for them (no store forwarding), which cost the forward pass ~12 % on the zoo's shapes.
inline vi lane_index() {
  vi lanes;
  for (int64_t l = 0; l < W; ++l) lanes[l] = static_cast<int32_t>(l);
  return lanes;
}
inline vi seen(int64_t j, int64_t first, int64_t n) {
  const vi key = lane_index() + splat_int(j);
  return (key >= splat_int(first)) & (key < splat_int(n));
}
inline float sum(vf x) {
  float s = 0.0f;
  for (int64_t l = 0; l < W; ++l) s += x[l];
  return s;
}

// exp of a vector, Cephes' expf polynomial (relative error ~2e-7), inputs clamped to +-87
inline vf exp(vf x) {
  x = x < splat(-87.0f) ? splat(-87.0f) : x;
  x = x > splat(87.0f) ? splat(87.0f) : x;
  const vf t = x * 1.44269504088896341f + 0.5f;
  vf n = __builtin_convertvector(__builtin_convertvector(t, vi), vf);
  n = n > t ? n - 1.0f : n;  // floor
  const vf r = x - n * 0.693359375f + n * 2.12194440e-4f;
  vf p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const vi bits = (__builtin_convertvector(n, vi) + 127) << 23;
  return p * reinterpret_cast<const vf&>(bits);
}

// Scratch floats on 64-byte boundaries, so each vector load touches one cache line.
class Tile {
 public:
  explicit Tile(int64_t n)
      : size_(n), data_(static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64))) {
    std::fill(begin(), end(), 0.0f);
  }
  ~Tile() { std::free(data_); }
  Tile(const Tile&) = delete;
  Tile& operator=(const Tile&) = delete;
  float* data() { return data_; }
  float* begin() { return data_; }
  float* end() { return data_ + size_; }
  float& operator[](int64_t i) { return data_[i]; }

 private:
  int64_t size_;
  float* data_;
};

// One (batch, head) slice of [B, T, H, D] arrays, copied into padded tiles, and which keys each
// query sees: window and chunk are 0 where not used.
struct Head {
  int64_t seq, padded, heads, dim, window, chunk;

  int64_t offset(int64_t b, int64_t t, int64_t h) const { return ((b * seq + t) * heads + h) * dim; }

  // rows [padded, D], times factor; rows past seq stay zero
  void load_rows(const float* x, int64_t b, int64_t h, float factor, float* rows) const {
    std::fill(rows, rows + padded * dim, 0.0f);
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t d = 0; d < dim; ++d) rows[t * dim + d] = factor * x[offset(b, t, h) + d];
  }
  // transposed [D, padded]; columns past seq stay zero
  void load_columns(const float* x, int64_t b, int64_t h, float* cols) const {
    std::fill(cols, cols + padded * dim, 0.0f);
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t d = 0; d < dim; ++d) cols[d * padded + t] = x[offset(b, t, h) + d];
  }
  void store_rows(const float* rows, int64_t b, int64_t h, float* x) const {
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t d = 0; d < dim; ++d) x[offset(b, t, h) + d] = rows[t * dim + d];
  }
  // the first key query i sees; it never decreases with i
  int64_t first_key(int64_t i) const {
    int64_t first = 0;
    if (window > 0) first = std::max(first, i - window + 1);
    if (chunk > 0) first = std::max(first, i / chunk * chunk);
    return first;
  }
  // the key vectors a query block of rows i0..i0+R-1 needs: [key_begin, key_end)
  int64_t key_begin(int64_t i0) const { return first_key(i0) / W * W; }
  int64_t key_end(int64_t i0) const { return std::min(padded, ((i0 + R - 1) / W + 1) * W); }
};

// out[r, j] = <rows[r], cols[:, j]> for R rows and begin <= j < end
void products(const float* rows, const float* cols, const Head& s, int64_t begin, int64_t end,
              float* out) {
  for (int64_t j = begin; j < end; j += W) {
    vf acc[R] = {};
    for (int64_t d = 0; d < s.dim; ++d) {
      const vf c = load(cols + d * s.padded + j);
      for (int64_t r = 0; r < R; ++r) acc[r] += rows[r * s.dim + d] * c;
    }
    for (int64_t r = 0; r < R; ++r) store(out + r * s.padded + j, acc[r]);
  }
}

// out[r, :] = sum_j weights[r, j] rows[j, :] for begin <= j < end; D is a multiple of W
void weighted_sums(const float* weights, const float* rows, const Head& s, int64_t begin,
                   int64_t end, float* out) {
  for (int64_t d = 0; d < s.dim; d += W) {
    vf acc[R] = {};
    for (int64_t j = begin; j < end; ++j) {
      const vf x = load(rows + j * s.dim + d);
      for (int64_t r = 0; r < R; ++r) acc[r] += weights[r * s.padded + j] * x;
    }
    for (int64_t r = 0; r < R; ++r) store(out + r * s.dim + d, acc[r]);
  }
}

// out[j, :] += sum_r weights[r, j] rows[r, :] for begin <= j < end; D is a multiple of W. Each
// element adds its R terms in the order r = 0..R-1, block after block.
void accumulate_rows(const float* weights, const float* rows, const Head& s, int64_t begin,
                     int64_t end, float* out) {
  for (int64_t d = 0; d < s.dim; d += W) {
    vf x[R];  // the block's rows stay in registers across every key
    for (int64_t r = 0; r < R; ++r) x[r] = load(rows + r * s.dim + d);
    for (int64_t j = begin; j < end; ++j) {
      vf acc = load(out + j * s.dim + d);
      for (int64_t r = 0; r < R; ++r) acc += weights[r * s.padded + j] * x[r];
      store(out + j * s.dim + d, acc);
    }
  }
}

Head head_of(const ffi::Buffer<ffi::F32>& x, int64_t window, int64_t chunk) {
  auto d = x.dimensions();
  const size_t n = d.size();
  return {d[n - 3], (d[n - 3] + W - 1) / W * W, d[n - 2], d[n - 1], window, chunk};
}

// product of the leading (batch) dimensions
int64_t batch_of(const ffi::Buffer<ffi::F32>& x) {
  auto d = x.dimensions();
  int64_t batch = 1;
  for (size_t i = 0; i + 3 < d.size(); ++i) batch *= d[i];
  return batch;
}

ffi::Error Forward(ffi::Buffer<ffi::F32> q, ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v,
                   ffi::ResultBuffer<ffi::F32> out, ffi::ResultBuffer<ffi::F32> lse,
                   int64_t window, int64_t chunk) {
  const Head s = head_of(q, window, chunk);
  const int64_t batch = batch_of(q), tile = s.padded * s.dim;
  if (s.dim % W != 0)
    return ffi::Error::InvalidArgument("head dimension must be a multiple of the vector width");
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.dim));
  Tile qs(tile), kt(tile), vr(tile), p(R * s.padded), o(R * s.dim);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      s.load_rows(q.typed_data(), b, h, scale, qs.data());
      s.load_columns(k.typed_data(), b, h, kt.data());
      s.load_rows(v.typed_data(), b, h, 1.0f, vr.data());
      float* lse_bh = lse->typed_data() + (b * s.heads + h) * s.seq;
      for (int64_t i0 = 0; i0 < s.seq; i0 += R) {
        const int64_t begin = s.key_begin(i0), end = s.key_end(i0);
        products(qs.data() + i0 * s.dim, kt.data(), s, begin, end, p.data());
        float inverse[R];
        for (int64_t r = 0; r < R; ++r) {
          float* row = p.data() + r * s.padded;
          const int64_t first = s.first_key(i0 + r), n = i0 + r + 1;  // keys first..i
          vf top = splat(-INFINITY);
          for (int64_t j = begin; j < end; j += W) {
            const vf x = seen(j, first, n) ? load(row + j) : splat(-INFINITY);
            top = top > x ? top : x;
          }
          float m = top[0];
          for (int64_t l = 1; l < W; ++l) m = std::max(m, top[l]);
          vf totals = {};
          for (int64_t j = begin; j < end; j += W) {
            const vf e = seen(j, first, n) ? exp(load(row + j) - m) : splat(0.0f);
            store(row + j, e);
            totals += e;
          }
          const float total = sum(totals);
          inverse[r] = 1.0f / total;
          if (i0 + r < s.seq) lse_bh[i0 + r] = m + std::log(total);
        }
        weighted_sums(p.data(), vr.data(), s, begin, end, o.data());
        for (int64_t r = 0; r < R && i0 + r < s.seq; ++r)
          for (int64_t d = 0; d < s.dim; ++d)
            out->typed_data()[s.offset(b, i0 + r, h) + d] = o[r * s.dim + d] * inverse[r];
      }
    }
  }
  return ffi::Error::Success();
}

ffi::Error Backward(ffi::Buffer<ffi::F32> q, ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v,
                    ffi::Buffer<ffi::F32> out, ffi::Buffer<ffi::F32> lse,
                    ffi::Buffer<ffi::F32> dout, ffi::ResultBuffer<ffi::F32> dq,
                    ffi::ResultBuffer<ffi::F32> dk, ffi::ResultBuffer<ffi::F32> dv,
                    int64_t window, int64_t chunk) {
  const Head s = head_of(q, window, chunk);
  const int64_t batch = batch_of(q), tile = s.padded * s.dim;
  if (s.dim % W != 0)
    return ffi::Error::InvalidArgument("head dimension must be a multiple of the vector width");
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.dim));
  Tile qs(tile), g(tile), kt(tile), kr(tile), vt(tile), dkr(tile), dvr(tile);
  Tile p(R * s.padded), dp(R * s.padded), dq_rows(R * s.dim);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      s.load_rows(q.typed_data(), b, h, scale, qs.data());
      s.load_rows(dout.typed_data(), b, h, 1.0f, g.data());
      s.load_columns(k.typed_data(), b, h, kt.data());
      s.load_columns(v.typed_data(), b, h, vt.data());
      s.load_rows(k.typed_data(), b, h, 1.0f, kr.data());
      std::fill(dkr.begin(), dkr.end(), 0.0f);
      std::fill(dvr.begin(), dvr.end(), 0.0f);
      const float* lse_bh = lse.typed_data() + (b * s.heads + h) * s.seq;
      for (int64_t i0 = 0; i0 < s.seq; i0 += R) {
        const int64_t begin = s.key_begin(i0), end = s.key_end(i0);
        products(qs.data() + i0 * s.dim, kt.data(), s, begin, end, p.data());
        products(g.data() + i0 * s.dim, vt.data(), s, begin, end, dp.data());
        for (int64_t r = 0; r < R; ++r) {
          float* p_row = p.data() + r * s.padded;
          float* ds_row = dp.data() + r * s.padded;
          const int64_t i = i0 + r;
          if (i >= s.seq) {  // padding rows contribute nothing
            std::fill(p_row + begin, p_row + end, 0.0f);
            std::fill(ds_row + begin, ds_row + end, 0.0f);
            continue;
          }
          float delta = 0.0f;
          for (int64_t d = 0; d < s.dim; ++d)
            delta += g[i * s.dim + d] * out.typed_data()[s.offset(b, i, h) + d];
          const int64_t first = s.first_key(i);
          for (int64_t j = begin; j < end; j += W) {
            const vi mask = seen(j, first, i + 1);
            const vf p_j = mask ? exp(load(p_row + j) - lse_bh[i]) : splat(0.0f);
            store(p_row + j, p_j);
            store(ds_row + j, mask ? p_j * (load(ds_row + j) - delta) : splat(0.0f));
          }
        }
        // ds is the gradient of the scaled scores: dq = scale ds k, dk = ds (scale q)
        weighted_sums(dp.data(), kr.data(), s, begin, end, dq_rows.data());
        for (int64_t r = 0; r < R && i0 + r < s.seq; ++r)
          for (int64_t d = 0; d < s.dim; ++d)
            dq->typed_data()[s.offset(b, i0 + r, h) + d] = scale * dq_rows[r * s.dim + d];
        accumulate_rows(dp.data(), qs.data() + i0 * s.dim, s, begin, end, dkr.data());
        accumulate_rows(p.data(), g.data() + i0 * s.dim, s, begin, end, dvr.data());
      }
      s.store_rows(dkr.data(), b, h, dk->typed_data());
      s.store_rows(dvr.data(), b, h, dv->typed_data());
    }
  }
  return ffi::Error::Success();
}

}  // namespace

// The vector width this library was compiled with, for ropebook.attention to report.
extern "C" int64_t RopebookCausalAttentionLanes() { return W; }

XLA_FFI_DEFINE_HANDLER_SYMBOL(RopebookCausalAttentionForward, Forward,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<int64_t>("window")
                                  .Attr<int64_t>("chunk"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(RopebookCausalAttentionBackward, Backward,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<int64_t>("window")
                                  .Attr<int64_t>("chunk"));
