/* cpu_ext_conv.c - the IR_EXT_CONV extern: conv1d/conv2d (batched or not,
 * groups, stride, padding incl. 'same', dilation, bias, activation). Reads
 * the attributes of the graph node the extern came from, maps 1-D and
 * unbatched cases onto the 4-D geometry of cpu_conv2d_f32/f64 (cpu_conv.c),
 * and runs f16/bf16 through f32 temporaries. */
#include "cpu_rt.h"

#include <string.h>

/* Spatial attribute `name` of node n as (h, w) (runtime_conv_spatial_attr). */
static ptc_status spatial_attr(const cpu_ext_call* c, const gnode* n, const char* name,
                               int32_t nsp, int64_t dflt, int64_t* out) {
  return runtime_conv_spatial_attr(n, name, c->syms, c->n_syms, nsp, dflt, out);
}


static ptc_status conv_geometry(const cpu_ext_call* c, const runtime_tensor* x,
                                const runtime_tensor* w, const runtime_tensor* bias,
                                const runtime_tensor* out, cpu_conv_geom* g) {
  const ptc_graph* gr = c->p->graph;
  if (c->ext->graph_node >= gr->nodes.len)
    return PTC_ERR(INTERNAL, "cpu backend: conv extern without its graph node");
  const gnode* n = graph_node(gr, c->ext->graph_node);
  int32_t nsp = w->rank - 2;
  if (nsp < 1 || nsp > 2 || (x->rank != nsp + 1 && x->rank != nsp + 2))
    return PTC_ERR(INTERNAL, "cpu backend: conv: input rank %d, weight rank %d", x->rank, w->rank);
  bool batched = x->rank == nsp + 2;
  memset(g, 0, sizeof *g);
  int64_t xs[4], xst[4], ws[4], wst[4], os[4], ost[4];
  runtime_conv_as_4d(x, nsp, batched, xs, xst);
  runtime_conv_as_4d(w, nsp, true, ws, wst);
  runtime_conv_as_4d(out, nsp, batched, os, ost);
  g->n = xs[0], g->c_in = xs[1], g->h = xs[2], g->w = xs[3];
  g->c_out = ws[0], g->kh = ws[2], g->kw = ws[3];
  g->out_h = os[2], g->out_w = os[3];
  memcpy(g->x_strides, xst, sizeof xst);
  memcpy(g->w_strides, wst, sizeof wst);
  memcpy(g->out_strides, ost, sizeof ost);
  g->bias_stride = bias ? bias->strides[0] : 0;
  PTC_TRY(spatial_attr(c, n, "stride", nsp, 1, g->stride));
  PTC_TRY(spatial_attr(c, n, "dilation", nsp, 1, g->dil));
  PTC_TRY(spatial_attr(c, n, "padding", nsp, 0, g->pad));
  const gattr* ps = gattrs_find(&n->attrs, "padding_str");
  if (ps && ps->s && strcmp(ps->s, "same") == 0) { /* leading pad; the rest is implied */
    g->pad[0] = g->dil[0] * (g->kh - 1) / 2;
    g->pad[1] = g->dil[1] * (g->kw - 1) / 2;
  }
  const gattr* gp = gattrs_find(&n->attrs, "groups");
  g->groups = gp ? gp->i : 1;
  g->alpha = c->ext->alpha;
  g->beta = c->ext->beta;
  g->activation = c->ext->activation;
  return PTC_OK;
}

static ptc_status conv_float(const cpu_ext_call* c, const runtime_tensor* x,
                             const runtime_tensor* w, const runtime_tensor* bias,
                             const runtime_tensor* out) {
  cpu_conv_geom g;
  PTC_TRY(conv_geometry(c, x, w, bias, out, &g));
  if (out->dtype == PTC_F32)
    return cpu_conv2d_f32(&g, x->data, w->data, bias ? bias->data : NULL, out->data);
  return cpu_conv2d_f64(&g, x->data, w->data, bias ? bias->data : NULL, out->data);
}

/* f16 / bf16: operands converted to f32, the result converted back. */
static ptc_status conv_half(const cpu_ext_call* c, const runtime_tensor* x,
                            const runtime_tensor* w, const runtime_tensor* bias,
                            const runtime_tensor* out) {
  cpu_temp t[4];
  memset(t, 0, sizeof t);
  ptc_status s = cpu_temp_convert(c->ctx, x, PTC_F32, &t[0]);
  if (!s) s = cpu_temp_convert(c->ctx, w, PTC_F32, &t[1]);
  if (!s && bias) s = cpu_temp_convert(c->ctx, bias, PTC_F32, &t[2]);
  if (!s) s = cpu_temp_like(c->ctx, out, PTC_F32, &t[3]);
  if (!s) s = conv_float(c, &t[0].view, &t[1].view, bias ? &t[2].view : NULL, &t[3].view);
  if (!s) cpu_convert(&t[3].view, out);
  for (int i = 0; i < 4; i++) cpu_temp_free(&t[i]);
  return s;
}

ptc_status cpu_ext_conv(const cpu_ext_call* c) {
  const ir_extern* e = c->ext;
  if (e->n_in < 2 || e->n_out != 1)
    return PTC_ERR(INTERNAL, "cpu backend: conv extern with %u inputs, %u outputs", e->n_in,
                   e->n_out);
  const runtime_tensor* bias = e->n_in > 2 && e->in[2] >= 0 ? &c->in[2] : NULL;
  int32_t dt = c->out[0].dtype;
  if (c->in[0].dtype != dt || c->in[1].dtype != dt || (bias && bias->dtype != dt))
    return PTC_ERR(INTERNAL, "cpu backend: conv operands of mixed dtypes");
  if (dt == PTC_F32 || dt == PTC_F64) return conv_float(c, &c->in[0], &c->in[1], bias, &c->out[0]);
  if (dt == PTC_F16 || dt == PTC_BF16) return conv_half(c, &c->in[0], &c->in[1], bias, &c->out[0]);
  return PTC_ERR(UNIMPLEMENTED, "cpu backend: conv of %s tensors", ptc_dtype_name(dt));
}
