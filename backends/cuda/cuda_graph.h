/* cuda_graph.h - CUDA-graph mode of the cuda backend (internal):
 * mode="reduce-overhead" / "max-autotune". Static run frames (cuda_plan_run.c)
 * and the per-executable table of recorded graphs (cuda_graph.c).
 *
 * How a call goes (cuda_graphs_run):
 *  - the key is the run's symbol values (every input size); the first call
 *    of a key runs plainly (warm-up: cubin cache, allocator, autotuning) and
 *    enters the key in the table; the second records the plan into a graph
 *    and replays it, and every later call of that key replays it;
 *  - at most CUDA_GRAPH_CAP keys get a graph; later keys run plainly (logged
 *    once);
 *  - a recorded graph works on memory of its own (a static frame: inputs in
 *    the compiled layout, contiguous outputs, workspace, temporaries and the
 *    error word, all held until the executable is destroyed), so no other
 *    run can be handed that memory by the caching allocator. A replay copies
 *    the caller's inputs into the static inputs (one device-to-device copy
 *    per input when the layouts agree, a strided copy otherwise), launches
 *    the graph on the caller's stream and copies the static outputs into
 *    the caller's outputs: callers may pass different buffers every call,
 *    and changed input contents are always seen;
 *  - direct graphs: when a shape's call passes the same input and output
 *    addresses and strides as the previous call of that shape, a second
 *    graph is recorded on those caller buffers (up to CUDA_GRAPH_DIRECT per
 *    shape; its workspace and temporaries still its own) and later calls
 *    with exactly those buffers replay it with one launch and no copies
 *    (inference loops reuse their buffers; PyTorch's caching allocator
 *    hands a freed output's block back to the next call);
 *  - recording is a capture (relaxed mode) on a private non-blocking stream
 *    (capture is not allowed on the legacy NULL stream); nothing executes
 *    during a capture, so no ordering with the caller's stream is needed;
 *    the graph is launched on the caller's stream (the NULL stream too);
 *  - off automatically, with one log line (PTC_LOG_INFO) and the reason in
 *    describe: a step runs on the host (it synchronises and copies through
 *    host memory), the plan draws random numbers (the seed is a kernel
 *    argument baked at capture), or the driver lacks the graph entry
 *    points. A failed capture turns that key to plain runs (logged).
 *  - a plan whose kernels can report an error reads the error word back
 *    after the graph launch (a host wait, as in plain runs).
 *
 * Thread-safety: one mutex per table; replays of one executable from several
 * threads are serialised on the host; a replay on a stream other than the
 * last one waits for the device first (the static memory is shared).
 */
#ifndef PTC_BACKENDS_CUDA_GRAPH_H
#define PTC_BACKENDS_CUDA_GRAPH_H

#include "cuda_plan.h"

enum { CUDA_GRAPH_CAP = 8, CUDA_GRAPH_DIRECT = 4 };

/* ---- static frames (cuda_plan_run.c) ------------------------------------------ */
typedef struct cuda_frame cuda_frame;

/** Binds a frame of `plan` for the given symbol values whose memory is held
 * until cuda_frame_close (allocated on alloc_stream from the caching
 * allocator): workspace, temporaries, the error word and, with inputs NULL,
 * static inputs of the compiled layout and contiguous static outputs;
 * otherwise the caller's inputs and outputs are bound (the pointers are
 * baked into a graph recorded from it), and an input that would need a
 * relayout copy is refused (UNIMPLEMENTED). Queues no work. The primary
 * context must be current. Errors: RESOURCE_EXHAUSTED, UNIMPLEMENTED,
 * errors evaluating the layouts. */
ptc_status cuda_frame_open(const cuda_plan* plan, const ptc_tensor* inputs, size_t n_in,
                           const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                           size_t n_syms, uint64_t seed, cu_stream alloc_stream, cuda_frame** out);
/** Queues the frame's run on `stream` (may be capturing): error word
 * cleared, every step, outputs copied into the static outputs. Fails (no
 * host sync done) on a launch error. */
ptc_status cuda_frame_exec(cuda_frame* f, cu_stream stream);
/** When the plan can report kernel errors: reads the error word back on
 * `stream` (waits for it) and returns the op error; PTC_OK otherwise. */
ptc_status cuda_frame_check(cuda_frame* f, cu_stream stream);
/** Static input i (device address, shape and strides of the compiled layout). */
const runtime_tensor* cuda_frame_input(const cuda_frame* f, size_t i);
/** Static output j (contiguous, device memory). */
const ptc_tensor* cuda_frame_output(const cuda_frame* f, size_t j);
/** Returns the frame's memory to the cache (the caller makes sure no queued
 * work still uses it). Accepts NULL. */
void cuda_frame_close(cuda_frame* f);

/* ---- the table of recorded graphs (cuda_graph.c) ------------------------------- */
typedef struct cuda_graphs cuda_graphs;

/** The table for `plan` when `mode` asks for graphs ("reduce-overhead",
 * "max-autotune"); *out NULL for other modes (NULL = "default"). When the
 * plan is unsafe for graphs the table exists in the off state (describe
 * says why; one PTC_LOG_INFO line). Errors: RESOURCE_EXHAUSTED. */
ptc_status cuda_graphs_create(const cuda_plan* plan, const char* mode, cuda_graphs** out);
/** Runs through a graph when possible: *done true when this call was
 * handled (replayed, or recorded and replayed; the status is the run's),
 * false when the caller must run the plan plainly (warm-up call of a new
 * key, graphs off, cap reached, capture failed). The primary context must
 * be current. Thread-safe. */
ptc_status cuda_graphs_run(cuda_graphs* t, const ptc_tensor* inputs, size_t n_in,
                           const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                           size_t n_syms, uint64_t seed, cu_stream stream, bool* done);
/** One line for describe: the mode, on/off (why), graphs recorded, replays
 * and plain runs so far. Accepts NULL (nothing written). Thread-safe. */
void cuda_graphs_describe(cuda_graphs* t, ptc_strbuf* sb);
/** Counters (for tests): graphs recorded, replays, plain runs counted by
 * the table. Accepts NULL (zeros). */
void cuda_graphs_stats(cuda_graphs* t, uint64_t* recorded, uint64_t* replays, uint64_t* plain);
/** Destroys the graphs and their static frames (waits for the device
 * first: a replay may still be queued). Makes the primary context current
 * for the call. Accepts NULL. */
void cuda_graphs_destroy(cuda_graphs* t);

#endif /* PTC_BACKENDS_CUDA_GRAPH_H */
