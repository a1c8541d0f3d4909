package workload

import (
	"fmt"
	"math/rand/v2"

	"github.com/servesim/servesim/sim"
)

// StreamData is the random stream of the shared_prefix generator's prompt
// order.
const StreamData uint64 = 6

// SharedPrefixData is inference-perf's `shared_prefix` data generator
// (kubernetes-sigs/inference-perf; see ../shared/data/vllm-h100-runs/
// SOURCE.md): Groups × PromptsPerGroup distinct prompts, each its group's
// system prompt (SystemPromptLen tokens, the same for the whole group)
// followed by its own question (QuestionLen tokens), cycled through in one
// fixed shuffled order (drawn once from the seed), so a prompt repeats every
// Groups × PromptsPerGroup requests. Every request asks for OutputLen tokens
// (inference-perf sends ignore_eos).
//
// Each prompt carries the chained hashes of its full blocks of BlockTokens
// tokens (the engine's KV block size; 16 when 0): the blocks wholly inside
// the system prompt have hashes of the group, shared by its prompts, and
// the later ones hashes of the prompt, so a prefix cache hits the system
// prompt from its group's second request on and the whole prompt's full
// blocks when it comes round again.
type SharedPrefixData struct {
	Groups          int `toml:"num_groups" json:"num_groups"`
	PromptsPerGroup int `toml:"num_prompts_per_group" json:"num_prompts_per_group"`
	SystemPromptLen int `toml:"system_prompt_len" json:"system_prompt_len"`
	QuestionLen     int `toml:"question_len" json:"question_len"`
	OutputLen       int `toml:"output_len" json:"output_len"`
	BlockTokens     int `toml:"-" json:"-"`
}

// maxDataPrompts bounds Groups × PromptsPerGroup (the order table holds one
// int32 per prompt).
const maxDataPrompts = 1 << 24

// Validate reports whether d is a valid generator.
func (d SharedPrefixData) Validate() error {
	switch {
	case d.Groups < 1 || d.PromptsPerGroup < 1:
		return fmt.Errorf("workload: shared_prefix: num_groups %d, num_prompts_per_group %d: both must be ≥ 1", d.Groups, d.PromptsPerGroup)
	case d.Groups*d.PromptsPerGroup > maxDataPrompts || d.Groups > maxDataPrompts || d.PromptsPerGroup > maxDataPrompts:
		return fmt.Errorf("workload: shared_prefix: %d × %d prompts: at most %d", d.Groups, d.PromptsPerGroup, maxDataPrompts)
	case d.SystemPromptLen < 0 || d.QuestionLen < 0 || d.SystemPromptLen+d.QuestionLen < 1:
		return fmt.Errorf("workload: shared_prefix: system_prompt_len %d, question_len %d: both ≥ 0 and a prompt of ≥ 1 token", d.SystemPromptLen, d.QuestionLen)
	case d.OutputLen < 1:
		return fmt.Errorf("workload: shared_prefix: output_len %d: must be ≥ 1", d.OutputLen)
	case d.BlockTokens < 0:
		return fmt.Errorf("workload: shared_prefix: block tokens %d: must be ≥ 0", d.BlockTokens)
	}
	return nil
}

// dataCycle yields the generator's prompts in their cycled order.
type dataCycle struct {
	d      SharedPrefixData
	order  []int32 // prompt indices, shuffled once
	prompt int     // tokens per prompt, clamped
	hashes []uint64
}

func newDataCycle(d SharedPrefixData, seed uint64, maxPrompt int) *dataCycle {
	if d.BlockTokens == 0 {
		d.BlockTokens = 16
	}
	n := d.Groups * d.PromptsPerGroup
	c := &dataCycle{d: d, order: make([]int32, n), prompt: min(d.SystemPromptLen+d.QuestionLen, maxPrompt)}
	for i := range c.order {
		c.order[i] = int32(i)
	}
	r := rand.New(rand.NewPCG(seed, StreamData))
	r.Shuffle(n, func(i, j int) { c.order[i], c.order[j] = c.order[j], c.order[i] })
	c.hashes = make([]uint64, c.prompt/d.BlockTokens)
	return c
}

// fill makes r request id at time at: prompt order[id mod n].
func (c *dataCycle) fill(r *Request, id int64, at sim.Time) {
	p := uint64(c.order[id%int64(len(c.order))])
	g := p / uint64(c.d.PromptsPerGroup)
	sys := c.d.SystemPromptLen / c.d.BlockTokens // blocks wholly in the system prompt
	for j := range c.hashes {
		if j < sys {
			c.hashes[j] = splitmix(g<<32 | uint64(j) | 3<<62)
		} else {
			c.hashes[j] = splitmix(p<<32 | uint64(j) | 1<<62)
		}
	}
	*r = Request{ID: id, Arrival: at, PromptTokens: c.prompt, OutputTokens: c.d.OutputLen,
		Prefix: c.hashes, PrefixBlockTokens: c.d.BlockTokens}
}
