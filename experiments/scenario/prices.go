package scenario

// The process-wide table of token-count prices (hardware.PriceStore) that
// plans of the same model, GPU, layout and kernel share: a sweep's points
// each resolve their own plan, and without it each would price the same
// token counts afresh (about 40 % of a sweep's simulation CPU).

import (
	"fmt"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// prices is the store resolved plans share; nil turns sharing off (a
// benchmark's cold case). 64 keys at most: a table holds the counts its
// runs priced (60 bytes a count, in chunks of 1,024 counts, up to the
// batch-token budget: 0.5 MB at 8,192 tokens, 3.9 MB at the table's bound
// of 65,536), so 64 tables of 8,192-token budgets are about 32 MB.
var prices = hardware.NewPriceStore(64)

// sharePrices gives st the shared table of (m, g, par, kern, kernelID).
// kernelID is the digest of the kernel model's definition (kernelModel,
// engineKernel: the profile's bytes, its stack, the engine's wrappers and
// their numbers); the kernel's Go type and the model's, GPU's and layout's
// values complete the key. An empty kernelID (a kernel of unknown
// definition) shares nothing.
func sharePrices(st *hardware.StepModel, m *models.Model, g *hardware.GPU, par models.Parallel, kern hardware.KernelModel, kernelID string) {
	if prices == nil || kernelID == "" {
		return
	}
	st.SharePrices(prices, DigestOf(m, g, par, fmt.Sprintf("%T", kern), kernelID))
}
