// cuda_welford.cuh - one-pass var / std / var_mean kernels of the cuda
// backend (embedded as ptc_cuda_welford_text; compiled after
// cuda_prelude.cuh into a module per input dtype on the first run that
// needs it; host side: cuda_welford.c).
//
// Each row (the reduced elements of one output entry) is read once. A
// thread keeps a running state (count n, mean, M2 = sum of squared
// deviations from the mean) and folds in its loads a batch at a time: the
// batch's own mean and M2 in registers (its size a power of two), then the
// batch is merged into the state with Chan's parallel formula
//     n = na + nb, d = mb - ma, mean = ma + d * nb / n,
//     M2 = M2a + M2b + d^2 * na * nb / n
// (one division per batch); single elements (row ends, heads before the
// first 16-byte boundary, strided rows) take Welford's update. A state
// holds its mean as shift + offset (the shift one of its values), and
// every deviation is taken from the shift, so values far from zero (1e4 +
// noise in float) lose no digits to cancellation. Threads are
// merged by the same formula: warp shuffles down a tree, then the warps'
// states through shared memory, in a fixed order (the result depends only
// on the launch shape, never on timing).
//  - ptc_wf_rows_<T>: blocks take (row, chunk) tasks; with one chunk a row
//    the block writes var (or std) and the mean, else its state to the
//    partials workspace [row * nchunks + chunk];
//  - ptc_wf_fold_<T>: one warp a row folds the row's partials in chunk
//    order (lane l takes l, l + 32, ...; then the shuffle tree) and writes
//    the outputs: the split path for few huge rows.
// Inputs of any strides: contiguous rows use 16-byte vector loads (a row's
// first elements up to a 16-byte boundary are loaded singly by chunk 0,
// chunks start on boundaries); other rows are read element by element
// through the reduced dims' strides. Half / bfloat16 compute in float,
// float in float, double in double. var = M2 / dof with dof = max(0, n -
// correction) computed on the host: 0 / 0 gives NaN, M2 / 0 inf, as the
// ref backend; an empty row gives mean NaN.

#define PTC_WF_MAXD 16
#define PTC_WF_THREADS 256
#define PTC_WF_UNROLL 4

struct ptc_wf_args {
  i64 rows;      // output entries
  i64 n;         // reduced elements a row
  i64 chunk;     // elements a chunk (a multiple of the vector width)
  i64 nchunks;   // chunks a row (1: the rows kernel writes the outputs)
  i64 kshape[PTC_WF_MAXD], kst[PTC_WF_MAXD];   // kept dims: sizes, input strides
  i64 o0st[PTC_WF_MAXD], o1st[PTC_WF_MAXD];    // their output strides (var/std, mean)
  i64 rshape[PTC_WF_MAXD], rst[PTC_WF_MAXD];   // reduced dims (coalesced), input strides
  i32 nk, nr;
  i32 vec;       // rows contiguous (nr <= 1, unit stride): vector loads
  i32 mode;      // 0 var, 1 std, 2 var_mean
  double dof;    // max(0, n - correction)
};

// Running state of a thread / warp / block: n elements of mean k + m and
// M2 = sum of squared deviations from that mean. The shift k (a value of
// the row: the state's first) keeps m and the deviations small, so values
// far from zero (1e4 + noise) lose no digits to cancellation: differences
// of two shifts are exact in floating point.
template <typename A> struct ptc_wf_st {
  A k, m, m2;
  i64 n;
};

// Partial state in the workspace (host: 3 * sizeof(A) rounded up to 8, + 8).
template <typename A> struct ptc_wf_part {
  A k, m, m2;
  i64 n;
};

template <typename A> PTC_D void ptc_wf_init(ptc_wf_st<A>& s) {
  s.k = 0;
  s.m = 0;
  s.m2 = 0;
  s.n = 0;
}

// s <- s merged with state (kb, mb, m2b, nb) (Chan et al.):
//   n = na + nb, d = mean_b - mean_a, mean = mean_a + d * nb / n,
//   M2 = M2a + M2b + d^2 * na * nb / n.
template <typename A> PTC_D void ptc_wf_merge(ptc_wf_st<A>& s, A kb, A mb, A m2b, i64 nb) {
  if (nb == 0) return;
  if (s.n == 0) {
    s.k = kb;
    s.m = mb;
    s.m2 = m2b;
    s.n = nb;
    return;
  }
  const i64 t = s.n + nb;
  const A f = (A)nb / (A)t;
  const A d = (kb - s.k) + (mb - s.m);
  s.m += d * f;
  s.m2 += m2b + d * d * (A)s.n * f;
  s.n = t;
}

// Welford's update with one element.
template <typename A> PTC_D void ptc_wf_push(ptc_wf_st<A>& s, A x) {
  if (s.n == 0) s.k = x;
  s.n++;
  const A y = x - s.k;
  const A d = y - s.m;
  s.m += d / (A)s.n;
  s.m2 += d * (y - s.m);
}

// A batch of B (a power of two) values: their mean and M2 relative to the
// state's shift in registers, then merged (one division a batch).
template <typename A, int B> PTC_D void ptc_wf_batch(ptc_wf_st<A>& s, A* v) {
  if (s.n == 0) s.k = v[0];
  A sum = 0;
#pragma unroll
  for (int i = 0; i < B; i++) {
    v[i] -= s.k;
    sum += v[i];
  }
  const A mb = sum * ((A)1 / (A)B);
  A m2 = 0;
#pragma unroll
  for (int i = 0; i < B; i++) {
    A d = v[i] - mb;
    m2 += d * d;
  }
  if (s.n == 0) {
    s.m = mb;
    s.m2 = m2;
    s.n = B;
    return;
  }
  const i64 t = s.n + B;
  const A f = (A)B / (A)t;
  const A d = mb - s.m;
  s.m += d * f;
  s.m2 += m2 + d * d * (A)s.n * f;
  s.n = t;
}

// ---- element types: storage S, compute A, V elements in 16 bytes --------------------
PTC_D float ptc_wf_in(float x, int) { return x; }
PTC_D double ptc_wf_in(double x, int) { return x; }
PTC_D float ptc_wf_in(u16 x, int bf) { return bf ? ptc_bf2f(x) : ptc_h2f(x); }
PTC_D void ptc_wf_out(float* p, float v, int) { *p = v; }
PTC_D void ptc_wf_out(double* p, double v, int) { *p = v; }
PTC_D void ptc_wf_out(u16* p, float v, int bf) { *p = bf ? ptc_f2bf(v) : ptc_f2h(v); }
PTC_D float ptc_wf_sqrt(float v) { return sqrtf(v); }
PTC_D double ptc_wf_sqrt(double v) { return sqrt(v); }

// The 16 bytes at p (aligned) as V values.
template <typename S, typename A, int V> PTC_D void ptc_wf_ld16(const S* p, A* v, int bf) {
  uint4 u = __ldg((const uint4*)p);
  const S* e = (const S*)&u;
#pragma unroll
  for (int i = 0; i < V; i++) v[i] = ptc_wf_in(e[i], bf);
}

// Input offset of reduced element j of a strided row.
PTC_D i64 ptc_wf_roff(const ptc_wf_args& a, i64 j) {
  if (a.nr == 1) return j * a.rst[0];
  i64 off = 0;
  for (int d = a.nr - 1; d >= 0; d--) {
    i64 q = j / a.rshape[d];
    off += (j - q * a.rshape[d]) * a.rst[d];
    j = q;
  }
  return off;
}

// Merges the block's states into thread 0's (fixed order: shuffle tree in
// each warp, then warp 0 over the warps' states).
template <typename A> PTC_D void ptc_wf_block(ptc_wf_st<A>& s) {
  __shared__ A sh_k[32], sh_m[32], sh_m2[32];
  __shared__ i64 sh_n[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nw = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    A kb = __shfl_down_sync(0xffffffffu, s.k, o);
    A mb = __shfl_down_sync(0xffffffffu, s.m, o);
    A m2b = __shfl_down_sync(0xffffffffu, s.m2, o);
    i64 nb = __shfl_down_sync(0xffffffffu, s.n, o);
    if (lane + o < 32) ptc_wf_merge(s, kb, mb, m2b, nb);
  }
  if (nw == 1) return;
  __syncthreads();  // shared arrays free (a previous task's reads done)
  if (lane == 0) {
    sh_k[warp] = s.k;
    sh_m[warp] = s.m;
    sh_m2[warp] = s.m2;
    sh_n[warp] = s.n;
  }
  __syncthreads();
  if (warp == 0) {
    s.k = lane < nw ? sh_k[lane] : (A)0;
    s.m = lane < nw ? sh_m[lane] : (A)0;
    s.m2 = lane < nw ? sh_m2[lane] : (A)0;
    s.n = lane < nw ? sh_n[lane] : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      A kb = __shfl_down_sync(0xffffffffu, s.k, o);
      A mb = __shfl_down_sync(0xffffffffu, s.m, o);
      A m2b = __shfl_down_sync(0xffffffffu, s.m2, o);
      i64 nb = __shfl_down_sync(0xffffffffu, s.n, o);
      if (lane + o < 32) ptc_wf_merge(s, kb, mb, m2b, nb);
    }
  }
}

// Writes a row's outputs from its final state.
template <typename S, typename A>
PTC_D void ptc_wf_write(const ptc_wf_args& a, const ptc_wf_st<A>& s, i64 row, S* out0, S* out1,
                        int bf) {
  i64 o0 = 0, o1 = 0, r = row;
  for (int d = a.nk - 1; d >= 0; d--) {
    i64 q = r / a.kshape[d];
    i64 i = r - q * a.kshape[d];
    o0 += i * a.o0st[d];
    o1 += i * a.o1st[d];
    r = q;
  }
  A var = s.m2 / (A)a.dof;
  if (a.mode == 1) var = ptc_wf_sqrt(var);
  ptc_wf_out(out0 + o0, var, bf);
  if (a.mode == 2) {
    A mean = s.n == 0 ? (A)PTC_NAN_D : s.k + s.m;
    ptc_wf_out(out1 + o1, mean, bf);
  }
}

// The state of chunk c of the row at x (elements [lo, hi) of the row).
template <typename S, typename A, int V>
PTC_D void ptc_wf_chunk(const ptc_wf_args& a, const S* x, i64 c, ptc_wf_st<A>& s, int bf) {
  const i64 t = threadIdx.x, nt = blockDim.x;
  if (!a.vec) {
    i64 lo = c * a.chunk, hi = lo + a.chunk < a.n ? lo + a.chunk : a.n;
    for (i64 j = lo + t; j < hi; j += nt) ptc_wf_push(s, ptc_wf_in(x[ptc_wf_roff(a, j)], bf));
    return;
  }
  // the row's head up to the first 16-byte boundary (chunk 0 only)
  i64 mis = (i64)(((unsigned long long)(size_t)x / sizeof(S)) % (unsigned long long)V);
  i64 h = mis ? V - mis : 0;
  if (h > a.n) h = a.n;
  if (c == 0 && t < h) ptc_wf_push(s, ptc_wf_in(x[t], bf));
  i64 lo = h + c * a.chunk;
  i64 hi = lo + a.chunk < a.n ? lo + a.chunk : a.n;
  if (lo >= hi) return;
  const S* p = x + lo;
  const i64 len = hi - lo, step = nt * V * PTC_WF_UNROLL;
  i64 j = 0;
  for (; j + step <= len; j += step) {
    A v[V * PTC_WF_UNROLL];
#pragma unroll
    for (int u = 0; u < PTC_WF_UNROLL; u++)
      ptc_wf_ld16<S, A, V>(p + j + ((i64)u * nt + t) * V, v + u * V, bf);
    ptc_wf_batch<A, V * PTC_WF_UNROLL>(s, v);
  }
  for (i64 k = j + t * V; k + V <= len; k += nt * V) {
    A v[V];
    ptc_wf_ld16<S, A, V>(p + k, v, bf);
    ptc_wf_batch<A, V>(s, v);
  }
  for (i64 k = len / V * V + t; k < len; k += nt) ptc_wf_push(s, ptc_wf_in(p[k], bf));
}

template <typename S, typename A, int V>
PTC_D void ptc_wf_rows(const S* __restrict__ x, S* __restrict__ out0, S* __restrict__ out1,
                       ptc_wf_part<A>* __restrict__ part, const ptc_wf_args& a, int bf) {
  const i64 tasks = a.rows * a.nchunks;
  for (i64 task = blockIdx.x; task < tasks; task += gridDim.x) {
    const i64 row = task / a.nchunks, c = task - row * a.nchunks;
    i64 off = 0, r = row;
    for (int d = a.nk - 1; d >= 0; d--) {
      i64 q = r / a.kshape[d];
      off += (r - q * a.kshape[d]) * a.kst[d];
      r = q;
    }
    ptc_wf_st<A> s;
    ptc_wf_init(s);
    ptc_wf_chunk<S, A, V>(a, x + off, c, s, bf);
    ptc_wf_block(s);
    if (threadIdx.x == 0) {
      if (a.nchunks == 1) {
        ptc_wf_write<S, A>(a, s, row, out0, out1, bf);
      } else {
        ptc_wf_part<A> pp;
        pp.k = s.k;
        pp.m = s.m;
        pp.m2 = s.m2;
        pp.n = s.n;
        part[task] = pp;
      }
    }
  }
}

template <typename S, typename A>
PTC_D void ptc_wf_fold(S* __restrict__ out0, S* __restrict__ out1,
                       const ptc_wf_part<A>* __restrict__ part, const ptc_wf_args& a, int bf) {
  const int lane = threadIdx.x & 31;
  for (i64 row = blockIdx.x; row < a.rows; row += gridDim.x) {
    ptc_wf_st<A> s;
    ptc_wf_init(s);
    for (i64 c = lane; c < a.nchunks; c += 32) {
      ptc_wf_part<A> pp = part[row * a.nchunks + c];
      ptc_wf_merge(s, pp.k, pp.m, pp.m2, pp.n);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      A kb = __shfl_down_sync(0xffffffffu, s.k, o);
      A mb = __shfl_down_sync(0xffffffffu, s.m, o);
      A m2b = __shfl_down_sync(0xffffffffu, s.m2, o);
      i64 nb = __shfl_down_sync(0xffffffffu, s.n, o);
      if (lane + o < 32) ptc_wf_merge(s, kb, mb, m2b, nb);
    }
    if (lane == 0) ptc_wf_write<S, A>(a, s, row, out0, out1, bf);
  }
}

// The two kernels of one input dtype: NAME_rows and NAME_fold.
#define PTC_WF_KERNELS(NAME, S, A, V, BF)                                                      \
  extern "C" __global__ void __launch_bounds__(PTC_WF_THREADS)                               \
      NAME##_rows(const S* x, S* out0, S* out1, ptc_wf_part<A>* part, ptc_wf_args a) {       \
    ptc_wf_rows<S, A, V>(x, out0, out1, part, a, BF);                                        \
  }                                                                                          \
  extern "C" __global__ void __launch_bounds__(32)                                           \
      NAME##_fold(S* out0, S* out1, const ptc_wf_part<A>* part, ptc_wf_args a) {             \
    ptc_wf_fold<S, A>(out0, out1, part, a, BF);                                              \
  }
