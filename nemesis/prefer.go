package nemesis

// PreferCandidates is how many scenes a generator with GenOptions.Prefer
// draws to choose one.
const PreferCandidates = 4

// scene draws the next few related steps; their At count from the scene's
// start. Lease-aimed steps wait for the next grant of the key. With
// Prefer, it is chosen among candidates by their weight.
func (g *gen) scene(mix []Kind) []Step {
	if g.o.Prefer == nil {
		return g.drawScene(mix)
	}
	cands := make([][]Step, PreferCandidates)
	weights := make([]float64, PreferCandidates)
	total := 0.0
	for i := range cands {
		cands[i] = g.drawScene(mix)
		if len(cands[i]) > 0 {
			w := max(g.o.Prefer(cands[i]), 0)
			weights[i] = w * w
			total += weights[i]
		}
	}
	x := g.rng.Float64() * total
	for i, w := range weights {
		if x < w {
			return cands[i]
		}
		x -= w
	}
	return cands[0]
}
