/* test_ir_conv_nhwc.c - channels-last activations around convolutions in
 * the lowering (ir_lower_options.conv_nhwc, set by the CUDA backend): the
 * program's layouts (a large-plane conv2d writes [N][H][W][C], its stored
 * input too, graph outputs stay contiguous, small planes and grouped
 * convolutions stay NCHW, the option off changes nothing) and its results
 * through ir_interpret against the ref backend (residual blocks, a stem and
 * max pool in front, a small-plane convolution after, a small resnet with
 * a downsampling block, average pool and linear head). CPU only. */
#include "ir_test_util.h"

static ptc_context* ctx;

/* Strides of buffer b as constants (false if one is not constant). */
static bool buf_strides(const ir_program* p, int32_t b, int64_t* st) {
  const ir_buffer* bb = ir_buf(p, b);
  for (uint32_t d = 0; d < bb->rank; d++)
    if (!sym_is_const(bb->strides[d], &st[d])) return false;
  return true;
}

/* Per IR_EXT_CONV node in program order: 1 when its output is channels-last
 * ([N][H][W][C] strides), 0 when contiguous, -1 otherwise; and the same for
 * its input 0 in *in_nhwc. Returns the count. */
static int conv_layouts(const ir_program* p, int* out_nhwc, int* in_nhwc, int max) {
  int k = 0;
  for (size_t i = 0; i < p->nodes.len && k < max; i++) {
    const ir_node* n = ir_node_at(p, i);
    if (n->kind != IR_EXTERN || n->ext.kind != IR_EXT_CONV) continue;
    for (int which = 0; which < 2; which++) {
      int32_t b = which == 0 ? n->ext.out[0] : n->ext.in[0];
      const ir_buffer* bb = ir_buf(p, b);
      int64_t st[4], sh[4];
      int r = -1;
      if (bb->rank == 4 && buf_strides(p, b, st)) {
        for (int d = 0; d < 4; d++) sym_is_const(bb->shape[d], &sh[d]);
        bool nhwc = st[1] == 1 && st[3] == sh[1] && st[2] == sh[1] * sh[3] &&
                    st[0] == sh[1] * sh[2] * sh[3];
        bool contig = st[3] == 1 && st[2] == sh[3] && st[1] == sh[2] * sh[3];
        r = nhwc ? 1 : contig ? 0 : -1;
      }
      (which == 0 ? out_nhwc : in_nhwc)[k] = r;
    }
    k++;
  }
  return k;
}

/* x [2, C, HW, HW] (optionally a stem first: relu(conv(x) + b) max-pooled
 * 3x3 s2 p1) -> relu(conv(x)
 * + b) -> conv + b -> + x -> relu -> conv(stride 2, groups g2) -> output
 * (a graph output that is a conv output). */
static ptc_graph* block(int64_t c, int64_t hw, bool pool, int64_t g2, ptc_tensor* in, t_tensor* keep) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t xs[4] = {2, c, hw, hw}, ws[4] = {c, c, 3, 3}, w2s[4] = {c, c / g2, 3, 3}, bs[1] = {c};
  ptc_value x = t_input(g, PTC_F32, 4, xs), w = t_input(g, PTC_F32, 4, ws);
  ptc_value b = t_input(g, PTC_F32, 1, bs), w2 = t_input(g, PTC_F32, 4, w2s);
  t_tensor_init(&keep[0], PTC_F32, 4, xs, 1);
  t_tensor_init(&keep[1], PTC_F32, 4, ws, 2);
  t_tensor_init(&keep[2], PTC_F32, 1, bs, 3);
  t_tensor_init(&keep[3], PTC_F32, 4, w2s, 4);
  for (int i = 0; i < 4; i++) in[i] = keep[i].t;
  int64_t one[2] = {1, 1}, two[2] = {2, 2};
  ptc_attr at[2] = {ptc_attr_ints("stride", one, 2), ptc_attr_ints("padding", one, 2)};
  if (pool) {
    ptc_value si[3] = {x, w, b};
    x = t_unary(g, "relu", t_node(g, "conv2d", si, 3, at, 2));
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[2] = {1, 1};
    ptc_attr pa[3] = {ptc_attr_ints("kernel_size", k3, 2), ptc_attr_ints("stride", s2, 2),
                      ptc_attr_ints("padding", p1, 2)};
    x = t_node(g, "max_pool2d", &x, 1, pa, 3);
  }
  ptc_value ci[3] = {x, w, b};
  ptc_value t = t_unary(g, "relu", t_node(g, "conv2d", ci, 3, at, 2));
  ci[0] = t;
  t = t_node(g, "conv2d", ci, 3, at, 2);
  t = t_unary(g, "relu", t_binary(g, "add", t, x));
  ptc_attr at2[3] = {ptc_attr_ints("stride", two, 2), ptc_attr_ints("padding", one, 2),
                     ptc_attr_int("groups", g2)};
  ptc_value c2[2] = {t, w2};
  t = t_node(g, "conv2d", c2, 2, at2, 3);
  CHECK_OK(ptc_graph_add_output(g, t));
  return g;
}

static void run(int64_t c, int64_t hw, bool pool, int64_t g2, int64_t plane, const int* want_out,
                const int* want_in) {
  ptc_tensor in[4];
  t_tensor keep[4];
  ptc_graph* g = block(c, hw, pool, g2, in, keep);
  ir_lower_options o;
  ir_lower_options_init(&o);
  o.conv_nhwc = true;
  /* float32 graphs: conv_nhwc_plane_f32 decides (the other bound huge) */
  o.conv_nhwc_plane_f32 = plane;
  o.conv_nhwc_plane = (int64_t)1 << 40;
  printf("c%lld hw%lld pool%d groups%lld plane>%lld\n", (long long)c, (long long)hw, pool,
         (long long)g2, (long long)plane);
  ir_program* p = t_lower(g, &o);
  int on[8], inn[8], nc = pool ? 4 : 3;
  int k = p ? conv_layouts(p, on, inn, 8) : 0;
  CHECK(k == nc);
  for (int i = 0; i < k && i < nc; i++) {
    CHECK(on[i] == want_out[i]);
    CHECK(inn[i] == want_in[i]);
    if (on[i] != want_out[i] || inn[i] != want_in[i])
      printf("  convolution %d: output %d input %d\n", i, on[i], inn[i]);
  }
  /* the graph output: a contiguous buffer */
  if (p) {
    int64_t st[4];
    CHECK(buf_strides(p, p->output_bufs[0], st));
    const ir_buffer* ob = ir_buf(p, p->output_bufs[0]);
    int64_t sh[4];
    for (int d = 0; d < 4; d++) sym_is_const(ob->shape[d], &sh[d]);
    CHECK(st[3] == 1 && st[2] == sh[3] && st[1] == sh[2] * sh[3]);
  }
  ir_program_destroy(p);
  CHECK(t_matches_ref(ctx, g, &o, in, 4, 1e-4, 1e-4));
  /* the bounds swapped: the other dtypes' bound does not apply */
  o.conv_nhwc_plane = plane;
  o.conv_nhwc_plane_f32 = (int64_t)1 << 40;
  p = t_lower(g, &o);
  k = p ? conv_layouts(p, on, inn, 8) : 0;
  for (int i = 0; i < k; i++) CHECK(on[i] == 0 && inn[i] == 0);
  ir_program_destroy(p);
  /* the option off: every convolution NCHW */
  o.conv_nhwc = false;
  p = t_lower(g, &o);
  k = p ? conv_layouts(p, on, inn, 8) : 0;
  for (int i = 0; i < k; i++) CHECK(on[i] == 0);
  ir_program_destroy(p);
  CHECK(t_matches_ref(ctx, g, &o, in, 4, 1e-4, 1e-4));
  ptc_graph_destroy(g);
  for (int i = 0; i < 4; i++) t_tensor_free(&keep[i]);
}

/* A small resnet: stem (3 -> 8, 7x7 stride 2, relu) 32x32 -> 16x16, max
 * pool -> 8x8, a residual block, a downsampling block (3x3 stride 2 and a
 * 1x1 stride-2 shortcut reading the same stored value, 8 -> 16 channels,
 * 4x4), adaptive average pool, flatten, linear; with the threshold 32 the
 * stem and the 8x8 convolutions run channels-last, the 4x4 ones NCHW from
 * channels-last inputs. Against the ref backend, and the layouts of the
 * convolutions (in graph order). */
static void mini_resnet(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  static const int64_t shp[][4] = {{2, 3, 32, 32}, {8, 3, 7, 7}, {8, 8, 3, 3}, {8, 8, 3, 3},
                                   {16, 8, 3, 3}, {16, 16, 3, 3}, {16, 8, 1, 1}, {10, 16, 1, 1}};
  static const size_t rk[] = {4, 4, 4, 4, 4, 4, 4, 2};
  enum { NI = 8 };
  ptc_value in[NI];
  t_tensor keep[NI];
  ptc_tensor tin[NI];
  for (int i = 0; i < NI; i++) {
    in[i] = t_input(g, PTC_F32, rk[i], shp[i]);
    t_tensor_init(&keep[i], PTC_F32, rk[i], shp[i], (uint32_t)(11 + i));
    tin[i] = keep[i].t;
  }
  int64_t one[2] = {1, 1}, two[2] = {2, 2}, three[2] = {3, 3}, zero[2] = {0, 0};
  ptc_attr s1[2] = {ptc_attr_ints("stride", one, 2), ptc_attr_ints("padding", one, 2)};
  ptc_attr s2[2] = {ptc_attr_ints("stride", two, 2), ptc_attr_ints("padding", one, 2)};
  ptc_attr stem[2] = {ptc_attr_ints("stride", two, 2), ptc_attr_ints("padding", three, 2)};
  ptc_attr ds[2] = {ptc_attr_ints("stride", two, 2), ptc_attr_ints("padding", zero, 2)};
  ptc_value c2[2] = {in[0], in[1]};
  ptc_value x = t_unary(g, "relu", t_node(g, "conv2d", c2, 2, stem, 2));
  ptc_attr pa[3] = {ptc_attr_ints("kernel_size", three, 2), ptc_attr_ints("stride", two, 2),
                    ptc_attr_ints("padding", one, 2)};
  x = t_node(g, "max_pool2d", &x, 1, pa, 3);
  c2[0] = x, c2[1] = in[2];
  ptc_value t = t_unary(g, "relu", t_node(g, "conv2d", c2, 2, s1, 2));
  c2[0] = t, c2[1] = in[3];
  t = t_node(g, "conv2d", c2, 2, s1, 2);
  x = t_unary(g, "relu", t_binary(g, "add", t, x));
  c2[0] = x, c2[1] = in[4];
  t = t_unary(g, "relu", t_node(g, "conv2d", c2, 2, s2, 2));
  c2[0] = t, c2[1] = in[5];
  t = t_node(g, "conv2d", c2, 2, s1, 2);
  c2[0] = x, c2[1] = in[6];
  ptc_value sc = t_node(g, "conv2d", c2, 2, ds, 2);
  x = t_unary(g, "relu", t_binary(g, "add", t, sc));
  ptc_attr os = ptc_attr_ints("output_size", one, 2);
  x = t_node(g, "adaptive_avg_pool2d", &x, 1, &os, 1);
  ptc_attr fl[2] = {ptc_attr_int("start_dim", 1), ptc_attr_int("end_dim", -1)};
  x = t_node(g, "flatten", &x, 1, fl, 2);
  ptc_value li[2] = {x, in[7]}; /* weight [10, 16] */
  x = t_node(g, "linear", li, 2, NULL, 0);
  CHECK_OK(ptc_graph_add_output(g, x));
  ir_lower_options o;
  ir_lower_options_init(&o);
  o.conv_nhwc = true;
  o.conv_nhwc_plane_f32 = 32;
  printf("mini resnet, plane>32\n");
  ir_program* p = t_lower(g, &o);
  int on[8], inn[8];
  int k = p ? conv_layouts(p, on, inn, 8) : 0;
  /* stem, block (2), downsampling 3x3 s2, 3x3, 1x1 shortcut */
  static const int wo[6] = {1, 1, 1, 0, 0, 0}, wi[6] = {0, 1, 1, 1, 0, 1};
  CHECK(k == 6);
  for (int i = 0; i < k && i < 6; i++) {
    CHECK(on[i] == wo[i] && inn[i] == wi[i]);
    if (on[i] != wo[i] || inn[i] != wi[i])
      printf("  convolution %d: output %d input %d\n", i, on[i], inn[i]);
  }
  ir_program_destroy(p);
  CHECK(t_matches_ref(ctx, g, &o, tin, NI, 1e-4, 1e-4));
  ptc_graph_destroy(g);
  for (int i = 0; i < NI; i++) t_tensor_free(&keep[i]);
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  /* 8 channels x 4 bytes: the stored input (of the second convolution)
   * channels-last too, the graph input as it is; the last (stride-2, 5x5 =
   * 25 px) convolution's plane is at the threshold 25: NCHW output, but its
   * input (stored by the add + relu for it: a 10x10 plane) channels-last */
  static const int o1[3] = {1, 1, 0}, i1[3] = {0, 1, 1};
  run(8, 10, false, 1, 25, o1, i1);
  /* threshold below every plane: the last convolution channels-last as
   * well (its output the graph output: copied out contiguous) */
  static const int o2[3] = {1, 1, 1}, i2[3] = {0, 1, 1};
  run(8, 10, false, 1, 0, o2, i2);
  /* a stem and a max pool in front: the pool of the stem's channels-last
   * output is channels-last too (the first convolution's input, and the
   * residual) */
  static const int o3[4] = {1, 1, 1, 0}, i3[4] = {0, 1, 1, 1};
  run(8, 14, true, 1, 25, o3, i3);
  /* 3 channels (12 bytes): outputs channels-last, but the value stored for
   * the last convolution NCHW (the second reads the first's output as it
   * is: the relu folded into it) */
  static const int o4[3] = {1, 1, 1}, i4[3] = {0, 1, 0};
  run(3, 10, false, 1, 0, o4, i4);
  /* a grouped last convolution stays NCHW, and so does its stored input */
  static const int o5[3] = {1, 1, 0}, i5[3] = {0, 1, 0};
  run(8, 10, false, 2, 0, o5, i5);
  mini_resnet();
  ptc_context_release(ctx);
  return check_summary("test_ir_conv_nhwc");
}
