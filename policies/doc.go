// Package policies holds servesim's decision-makers: small functions of a
// read-only view of state that return a decision as plain data (STYLE §2).
// They never reach into the engine; the serving world (package sim/serve)
// gives them a View, applies the Decision they return, and schedules what
// follows. Because decisions are data with a String method, a policy can be
// tested on a hand-built view and its choices printed into golden files.
//
// Batching policies here:
//
//   - PrefillFirst: vLLM's original continuous batching (V0, chunked prefill
//     off). When waiting requests fit, an iteration runs only their whole
//     prompts (up to the token budget, the sequence limit and the free KV
//     blocks); otherwise it runs one decode token for every running request.
//   - Chunked: Sarathi-Serve / vLLM V1 chunked prefill. Every running decode
//     takes one token of the per-iteration budget first; prefill chunks of
//     partially prefilled and then waiting requests (FCFS) fill the rest.
//   - SGLang: SGLang's scheduler. A prefill batch whenever one forms, else
//     decode; admission by predicted tokens (PrefillAdder: the free KV less
//     new_token_ratio × the running requests' output left must hold a new
//     request's prompt and output). It keeps state of its instance (the
//     ratio), so the engine takes a copy per instance (PerInstance).
//
// They admit waiting requests in queue order and stop at the first one that
// does not fit, as vLLM does, so a long prompt is never overtaken.
package policies
