// Package serve is the serving world built on the event engine: requests
// arrive from a workload source, wait in an instance's queue, are batched by
// a policy into iterations of prefill chunks and decodes, hold blocks of a
// paged KV cache, are preempted by recompute when blocks run out, and finish.
// Each iteration's duration comes from a StepTimer (the kernel-time model of
// package hardware); each request's and iteration's record goes to a
// metrics.Collector and an optional Sink that streams them to files.
//
// The per-iteration cost does not grow with the batch: see Instance. With
// speculative decoding (InstanceConfig.Spec, specdec.go) it does: each
// step draws every decoding request's accepted drafts from the request's
// own seeded stream and advances it by them, O(decodes) a step.
//
// An Engine models the serving stack around the kernels: when an arriving
// request reaches the engine core's queue, when the batcher sees it, when a
// computed token reaches the client, and what CPU time a step adds. Ideal
// (kernels only) is the default; VLLMV1 models vLLM's V1 engine and SGLang
// SGLang's serving loop (with policies.SGLang as its scheduler), each
// mechanism with its source. Request records hold client times (arrival,
// first and last token as the client sees them); steps hold engine times.
//
// Invariants checked on every iteration (a violation panics: it is a bug):
// KV blocks used never exceed capacity; a batcher never returns an empty
// iteration while requests are running. At the end of a run every arrived
// request has finished or been rejected with a reason.
package serve
