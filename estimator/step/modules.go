package step

// RecomputeModuleNames lists the names Layout.RecomputeModules takes, in
// Megatron-Core's order (its --recompute-modules choices).
func RecomputeModuleNames() []string {
	out := make([]string, len(recomputeModuleNames))
	for i, r := range recomputeModuleNames {
		out[i] = r.name
	}
	return out
}
