// cuda_conv_common.cuh - what both convolution modules share (embedded as
// ptc_cuda_conv_common_text, appended after the prelude and before
// cuda_conv_igemm.cuh or cuda_conv_wg.cuh): the element types by kind
// number (0 f16, 1 bf16, 2 f32 computed as TF32) and the epilogue
// activations (0 none, 1 relu, 2 gelu, 3 gelu tanh, 4 silu, 5 sigmoid,
// 6 tanh: the ir_activation codes).

template <int K> struct ptc_conv_kind;
template <> struct ptc_conv_kind<0> {  // f16
  typedef u16 S;
  enum { ES = 2 };
  static PTC_D float load(S v) { return ptc_h2f(v); }
  static PTC_D S store(float v) { return ptc_f2h(v); }
};
template <> struct ptc_conv_kind<1> {  // bf16
  typedef u16 S;
  enum { ES = 2 };
  static PTC_D float load(S v) { return ptc_bf2f(v); }
  static PTC_D S store(float v) { return ptc_f2bf(v); }
};
template <> struct ptc_conv_kind<2> {  // f32 as tf32
  typedef float S;
  enum { ES = 4 };
  static PTC_D float load(S v) { return v; }
  static PTC_D S store(float v) { return v; }
};

// The transcendental activations out of line: inlined into every epilogue
// element they would multiply the code (and NVRTC's time) many times.
__device__ __noinline__ float ptc_conv_act_slow(int act, float x) {
  switch (act) {
    case 2: return 0.5f * x * (1.f + erff(x * 0.70710678118654752440f));
    case 3: return 0.5f * x * (1.f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
    case 4: return x / (1.f + expf(-x));
    case 5: return 1.f / (1.f + expf(-x));
    case 6: return tanhf(x);
    default: return x;
  }
}
PTC_D float ptc_conv_act(int act, float x) {
  return act == 0 ? x : act == 1 ? (x < 0.f ? 0.f : x) : ptc_conv_act_slow(act, x);
}
